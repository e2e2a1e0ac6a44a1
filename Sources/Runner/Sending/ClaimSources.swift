import APNs
import Foundation
import HeraldCore
import NIOConcurrencyHelpers
import Store

extension ClaimedDelivery: ClaimedItem {
    var deliveryID: Int64 { target.deliveryID }
    var environment: APNsEnvironment { target.environment }
    var app: String { target.app }
    var priorAttempts: Int { attempts }
}

extension ClaimedRefresh: ClaimedItem {
    var priorAttempts: Int { attempts }
}

/// A claimed delivery of a campaign, with the send slot its pace gave it
/// (nil: the campaign has no pace, it goes at once).
struct CampaignItem: ClaimedItem {
    var delivery: ClaimedDelivery
    var sendAt: ContinuousClock.Instant?

    var deliveryID: Int64 { delivery.deliveryID }
    var deviceID: Int64 { delivery.deviceID }
    var environment: APNsEnvironment { delivery.environment }
    var app: String { delivery.target.app }
    var priorAttempts: Int { delivery.attempts }
}

/// A campaign's deliveries, claimed from its partition of the ledger under
/// the run's lease; its plan says how they are claimed and built.
struct CampaignClaims: ClaimSource {
    let ledger: DeliveryLedger
    let campaigns: CampaignStore
    let db: DatabaseRetry
    let plan: any CampaignPlan
    let runID: Int64
    let options: RunOptions
    let personalizer: any DeliveryPersonalizer
    /// Set while the campaign's audience is still being written.
    let snapshotting: SnapshotWriting?
    /// The run's outcome writer, shared with the campaigns sending at once.
    let writer: OutcomeWriter
    /// The spans this session holds (docs/DESIGN.md, "The ledger by ranges").
    let book = SpanBookBox()

    var prepared: PreparedCampaign { plan.prepared }

    /// Batch rows are claimed by span first; then the rows claimed row by row (deferred,
    /// given back, retries, a gone run's stragglers).
    func claim(after cursor: Int64, excludingApps apps: [String]) async throws -> ClaimBatch<CampaignItem> {
        if plan.sendsBySpans, options.spans, let batch = try await claimSpan(after: cursor) {
            return batch
        }
        return try await claimRows(after: cursor, excludingApps: apps)
    }

    /// The next span's rows, or nil when there is none (or the run or campaign is not live:
    /// the row path's claim says which).
    private func claimSpan(after cursor: Int64) async throws -> ClaimBatch<CampaignItem>? {
        let (ledger, campaign, run, lease, limit) = (ledger, prepared.campaign.id, runID, options.lease, claimSize)
        let variables = prepared.builder.variables
        let inClaim = DeliveryLedger.claimReads(variables)
        while true {
            let slicesBefore = snapshotting?.slicesWritten ?? 0
            let (live, claimed) = try await db("claim a span of deliveries") {
                try await ledger.claimSpan(campaign: campaign, run: run, limit: limit, lease: lease)
            }
            guard live, let span = claimed else { return nil }
            var deliveries = try await db("read a span's deliveries") {
                try await ledger.spanRows(span, personal: inClaim ? variables : [])
            }
            snapshotting?.claimed(read: deliveries.count, empty: deliveries.isEmpty, slicesBefore: slicesBefore)
            book.add(span, rows: deliveries.map { SpanRow(id: $0.target.deliveryID, deviceID: $0.deviceID) })
            if deliveries.isEmpty {
                // A remainder whose rows were all written meanwhile: it ends at its bound.
                try await writer.record([], settlements: [SpanSettlement(span: span, settled: span.through)], campaign: campaign)
                continue
            }
            if !inClaim {
                try await Self.readPersonalValues(&deliveries, prepared: prepared, ledger: ledger, db: db, drawCodes: true)
            }
            return ClaimBatch(items: deliveries.map { CampaignItem(delivery: $0, sendAt: nil) }, end: cursor)
        }
    }

    private func claimRows(after cursor: Int64, excludingApps apps: [String]) async throws -> ClaimBatch<CampaignItem> {
        let (ledger, campaign, run, lease) = (ledger, prepared.campaign.id, runID, options.lease)
        let limit = claimSize
        let slicesBefore = snapshotting?.slicesWritten ?? 0
        // The templates' values come with the claim when it can read them all (not a code, drawn after it).
        let variables = prepared.builder.variables
        let inClaim = DeliveryLedger.claimReads(variables)
        let answer = try await db("claim deliveries") {
            try await ledger.claimNext(campaign: campaign, run: run, limit: limit, lease: lease, after: cursor,
                                       excludingApps: apps, personal: inClaim ? variables : [], token: plan.claimToken)
        }
        snapshotting?.claimed(read: answer.read, empty: answer.deliveries.isEmpty, slicesBefore: slicesBefore)
        var deliveries = answer.deliveries
        if !inClaim {
            try await Self.readPersonalValues(&deliveries, prepared: prepared, ledger: ledger, db: db, drawCodes: true)
        }
        var items = deliveries.map { CampaignItem(delivery: $0, sendAt: nil) }
        if prepared.campaign.pace != nil, !items.isEmpty {
            // The slots are taken once the rows are: none is spent on a row another run holds.
            let (campaigns, count) = (campaigns, items.count)
            if let slots = try await db("take send slots", { try await campaigns.reservePace(campaign: campaign, count: count) }) {
                let now = options.clock.now
                for i in items.indices { items[i].sendAt = slots.slot(i, from: now) }
            }
        }
        return ClaimBatch(items: items, end: answer.end, status: answer.status, runGone: answer.runGone)
    }

    /// Gives each delivery its values of the variables the campaign's
    /// templates name (one statement a batch; none without templates).
    /// `drawCodes`: the claimed deliveries of a run draw their users' codes
    /// first (a dry run and a test send read a sample in their place).
    static func readPersonalValues(_ deliveries: inout [ClaimedDelivery], prepared: PreparedCampaign,
                                   ledger: DeliveryLedger, db: DatabaseRetry, drawCodes: Bool = false) async throws {
        let variables = prepared.builder.variables
        // A row to be skipped (`ClaimedDelivery.skip`) draws no code and reads no value.
        let ids = deliveries.filter { $0.skip == nil }.map(\.target.deliveryID)
        guard !variables.isEmpty, !ids.isEmpty else { return }
        let campaign = prepared.campaign.id
        if drawCodes, variables.contains(.code), let pool = prepared.campaign.codePool {
            try await db("draw codes from the campaign's pool") { try await ledger.drawCodes(campaign: campaign, pool: pool, deliveries: ids) }
        }
        let values = try await db("read the recipients' data") {
            try await ledger.personalValues(campaign: campaign, deliveries: ids, variables: variables, drawn: drawCodes)
        }
        for i in deliveries.indices {
            deliveries[i].target.personal = values[deliveries[i].target.deliveryID]
        }
    }

    /// Sealed fields cost about 130 µs of CPU a notification: built on every core.
    var buildsOffLoop: Bool { prepared.builder.seals }

    /// A paced campaign holds only the next seconds of its slots: a pause
    /// is honoured within them, and a killed worker loses no more.
    var concurrencyLimit: Int? { prepared.campaign.pace == nil ? nil : claimSize }

    /// A paced campaign claims about two seconds of its pace at a time, so
    /// that workers share its rows and a killed one held few slots.
    var claimSize: Int {
        switch prepared.campaign.pace {
        case nil: options.batchSize
        case .perMinute(let rate): min(options.batchSize, max(1, rate / 30))
        case .within: min(options.batchSize, 50)
        }
    }

    func notification(for item: CampaignItem) -> Result<APNsNotification, CampaignProblem> {
        if let skip = item.delivery.skip { return .failure(CampaignProblem(skip)) }
        return plan.notification(for: item.delivery.target, apps: options.apps, personalizer: personalizer)
    }

    /// Span rows' outcomes become their spans' settlements; the others are written row by row.
    func record(_ outcomes: [DeliveryOutcome]) async throws {
        let (settlements, rows) = book.settle(outcomes)
        try await writer.record(rows, settlements: settlements, campaign: prepared.campaign.id)
    }

    /// Batch rows a span claim would find are due at once (a slice committed after the last claim).
    func nextDue(excludingApps apps: [String]) async throws -> Duration? {
        let (ledger, campaign) = (ledger, prepared.campaign.id)
        if plan.sendsBySpans, options.spans,
           try await db("find batch rows to claim", { try await ledger.spansDue(campaign: campaign) }) {
            return .zero
        }
        return try await db("find the next due delivery") { try await ledger.nextDue(campaign: campaign, excludingApps: apps) }
    }

    var isExpired: Bool { prepared.campaign.expiresAt.map { $0 <= Date() } ?? false }
    var moreComing: Bool { snapshotting?.isWriting ?? false }
}

/// A session's `SpanBook`, shared by its claims and its writes.
final class SpanBookBox: Sendable {
    private let book = NIOLockedValueBox(SpanBook())

    func add(_ span: SpanClaim, rows: [SpanRow]) {
        book.withLockedValue { $0.add(span, rows: rows) }
    }

    func settle(_ outcomes: [DeliveryOutcome]) -> (settlements: [SpanSettlement], rows: [DeliveryOutcome]) {
        book.withLockedValue { $0.settle(outcomes) }
    }
}

/// Config refresh pushes (contract 7): ledger rows without a campaign,
/// claimed under the run's lease like any delivery.
struct RefreshClaims: ClaimSource {
    static let collapseID = "herald-config"

    let ledger: DeliveryLedger
    let refreshes: ConfigRefreshStore
    let db: DatabaseRetry
    let runID: Int64
    let options: RunOptions

    /// The payload of a refresh push: no alert, only `content-available`.
    static func payload(etag: String) -> [UInt8] {
        var w = JSONWriter(capacity: 96)
        w.raw("{\"aps\":{\"content-available\":1},\"herald\":{\"config\":")
        w.string(etag)
        w.raw("}}")
        return w.bytes
    }

    func claim(after cursor: Int64, excludingApps apps: [String]) async throws -> ClaimBatch<ClaimedRefresh> {
        let (refreshes, run, limit, lease) = (refreshes, runID, options.batchSize, options.lease)
        let items = try await db("claim config refresh pushes") {
            try await refreshes.claim(run: run, limit: limit, lease: lease, excludingApps: apps)
        }
        return ClaimBatch(items: items)
    }

    func notification(for item: ClaimedRefresh) -> Result<APNsNotification, CampaignProblem> {
        .success(APNsNotification(
            deviceToken: item.deviceToken, environment: item.environment,
            pushType: "background", priority: 5, expiration: item.expiration,
            collapseID: Self.collapseID, apnsID: item.apnsID, topic: options.apps.topic(app: item.app),
            payload: Self.payload(etag: item.etag),
            credential: options.apps.credential(app: item.app, environment: item.environment)))
    }

    func record(_ outcomes: [DeliveryOutcome]) async throws {
        let (ledger, run) = (ledger, runID)
        _ = try await db("record outcomes") { try await ledger.record(outcomes, run: run, campaign: nil) }
    }

    func nextDue(excludingApps apps: [String]) async throws -> Duration? {
        let refreshes = self.refreshes
        return try await db("find the next due refresh push") { try await refreshes.nextDue(excludingApps: apps) }
    }
}
