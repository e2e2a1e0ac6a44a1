import Store

/// The outcome writes of a run's campaigns that send at once, one statement
/// at a time: what sessions hand over while a write is under way goes out
/// together in the next one, whatever campaign it is of (a group commit).
///
/// Each session still writes its own batches as `SendingSession` decides
/// (at its share of the write size, one at a time), and a batch counts as
/// unrecorded until the statement that holds it commits, so the run's
/// repeat bound is unchanged. What changes is the number of statements:
/// three campaigns at once wrote three times as many as one campaign, each
/// a third of the rows, and each statement pays a fixed cost (planning,
/// commit).
///
/// A write that would hold the batches of fewer campaigns than are sending
/// waits up to `linger` for the others' (as PostgreSQL's `commit_delay`
/// waits for other commits): without it a third of the writes held two
/// campaigns' and the rest one. A session hands a batch over
/// when it holds its share of the write size and goes on sending meanwhile,
/// so a wait of a few milliseconds costs it nothing.
actor OutcomeWriter {
    private struct Waiting {
        var campaign: Int64
        var outcomes: [DeliveryOutcome]
        var settlements: [SpanSettlement] = []
        var done: CheckedContinuation<Void, any Error>
    }

    private let ledger: DeliveryLedger
    private let db: DatabaseRetry
    private let run: Int64
    private var waiting: [Waiting] = []
    private var writing = false
    /// Statements written so far.
    private(set) var statements = 0

    /// The campaigns sending now (nil: the writer waits for nobody).
    private let budget: RunBudget?
    private let linger: Duration

    init(ledger: DeliveryLedger, db: DatabaseRetry, run: Int64, budget: RunBudget? = nil,
         linger: Duration = .milliseconds(3)) {
        self.ledger = ledger
        self.db = db
        self.run = run
        self.budget = budget
        self.linger = linger
    }

    /// Writes `outcomes` of `campaign`'s deliveries, with whatever else is
    /// handed over meanwhile; returns once the statement that held them committed.
    ///
    /// `settlements`: the spans' (`delivery_spans`), written first, in one statement for all campaigns.
    func record(_ outcomes: [DeliveryOutcome], settlements: [SpanSettlement] = [], campaign: Int64) async throws {
        guard !outcomes.isEmpty || !settlements.isEmpty else { return }
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            waiting.append(Waiting(campaign: campaign, outcomes: outcomes, settlements: settlements, done: done))
            if !writing {
                writing = true
                Task { await self.drain() }
            }
        }
    }

    /// Writes what waits, then what came meanwhile, until nothing does.
    private func drain() async {
        while !waiting.isEmpty {
            if let budget, Set(waiting.map(\.campaign)).count < budget.sessions {
                try? await db.clock.sleep(for: linger)
            }
            let group = waiting
            waiting.removeAll()
            let byCampaign = Self.merged(group.map { ($0.campaign, $0.outcomes) })
            let settlements = group.flatMap(\.settlements)
            let (ledger, run) = (ledger, run)
            statements += 1
            do {
                if !settlements.isEmpty {
                    _ = try await db("settle spans") { try await ledger.settle(settlements, run: run) }
                }
                if !byCampaign.isEmpty {
                    _ = try await db("record outcomes") { try await ledger.record(byCampaign: byCampaign, run: run) }
                }
                for w in group { w.done.resume() }
            } catch {
                for w in group { w.done.resume(throwing: error) }
            }
        }
        writing = false
    }

    /// The batches handed over, by campaign (in the order they came).
    static func merged(_ batches: [(campaign: Int64, outcomes: [DeliveryOutcome])]) -> [Int64: [DeliveryOutcome]] {
        var out: [Int64: [DeliveryOutcome]] = [:]
        for (campaign, outcomes) in batches { out[campaign, default: []].append(contentsOf: outcomes) }
        return out
    }
}
