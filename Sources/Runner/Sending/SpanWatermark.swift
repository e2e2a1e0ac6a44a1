import Store

/// One span of batch rows that a sending session holds, on plain values
/// (docs/DESIGN.md, "The ledger by ranges: spans and settlements"): which
/// rows were sent and how APNs answered, how far the next settlement moves
/// the span's watermark, which rows it must write because they differ, and
/// `unresolved` (U), the rows whose fate a kill -9 now would leave unknown.
///
/// The rules it owns:
/// - rows are sent in id order;
/// - a settlement passes every row answered 200 from the committed
///   watermark on, up to the first row still in flight; that row becomes a
///   straggler (written `in_flight`, then answered row by row) once it has
///   held the watermark back for `straggleAfter`, or at once under pressure
///   (U near the repeat bound), and the watermark goes on past it;
/// - every answer that is not 200 is written in the next settlement, with
///   the watermark it passes, never after it: no row below the committed
///   watermark is implied sent without a 200;
/// - U counts a row from its send until its fate is durable: below the
///   committed watermark with a 200, or written as an exception, or, for a
///   straggler, its answer written. A session starts a send only while the
///   sum of its spans' U is below its repeat bound.
///
/// One settlement is written at a time (the run's one writer): `settlement`
/// proposes it, and `committed` or `abandoned` says how its write ended.
struct SpanWatermark {
    /// How APNs answered a row.
    enum Answer: Equatable {
        case accepted
        /// Anything but 200: the row's outcome, written as an exception.
        case exception(DeliveryOutcome)
    }

    /// What a settlement writes, in one transaction.
    struct Settlement: Equatable {
        /// The span's new committed watermark: its rows up to this id are
        /// sent, unless written below as exceptions.
        var settled: Int64
        /// Rows written with their own outcome (not 200, or a straggler's answer).
        var exceptions: [DeliveryOutcome]
        /// Rows sent and not answered, written `in_flight` (stragglers).
        var stragglers: [Int64]
        /// Where the watermark stops, as an index into the span's rows.
        fileprivate var through: Int
        fileprivate var exceptionRows: [Int]
        fileprivate var stragglerRows: [Int]
        fileprivate var answeredStragglerRows: [Int]

        /// Nothing to write: the watermark stays and no row differs.
        var isEmpty: Bool { exceptions.isEmpty && stragglers.isEmpty && answeredStragglerRows.isEmpty }
    }

    private enum Fate: Equatable {
        case unsent
        case inFlight(since: ContinuousClock.Instant)
        case accepted
        /// Answered, not 200; `listed`: in the settlement being written.
        case answered(DeliveryOutcome, listed: Bool)
        /// Its exception is in the ledger.
        case written
        /// Held the watermark back: `marked` once its `in_flight` row is
        /// committed; `answer` once APNs answered; `listed` while the
        /// settlement carrying its mark or its answer is written.
        case straggler(since: ContinuousClock.Instant, marked: Bool, answer: DeliveryOutcome?, listed: Bool)
    }

    /// The span's lower bound: its rows are after it.
    let after: Int64
    /// The span's batch rows, in id order: the order they are sent in.
    let rows: [Int64]
    private var fates: [Fate]
    /// Rows sent so far: `rows[..<sent]`.
    private(set) var sent = 0
    /// The committed watermark, as an index: `rows[..<committedThrough]` are settled.
    private(set) var committedThrough = 0
    /// Rows whose fate a kill -9 now would leave unknown.
    private(set) var unresolved = 0
    private var writing = false

    init(after: Int64, rows: [Int64]) {
        precondition(rows.allSatisfy { $0 > after } && zip(rows, rows.dropFirst()).allSatisfy { $0 < $1 },
                     "a span's rows are after its lower bound, in id order")
        self.after = after
        self.rows = rows
        self.fates = Array(repeating: .unsent, count: rows.count)
    }

    /// The committed watermark as an id.
    var settled: Int64 { committedThrough == 0 ? after : rows[committedThrough - 1] }

    /// The next row to send, if any is left.
    var nextToSend: Int64? { sent < rows.count ? rows[sent] : nil }

    /// Every row is settled and every straggler answered in the ledger.
    var isDone: Bool { committedThrough == rows.count && unresolved == 0 }

    /// The next row goes out now.
    mutating func send(at now: ContinuousClock.Instant) -> Int64 {
        precondition(sent < rows.count, "no row left to send")
        fates[sent] = .inFlight(since: now)
        sent += 1
        unresolved += 1
        return rows[sent - 1]
    }

    /// APNs answered row `id` (sent by this span).
    mutating func answered(_ id: Int64, _ answer: Answer) {
        guard let i = index(of: id) else { preconditionFailure("row \(id) is not in this span") }
        switch fates[i] {
        case .inFlight:
            switch answer {
            case .accepted: fates[i] = .accepted
            case .exception(let outcome): fates[i] = .answered(outcome, listed: false)
            }
        case .straggler(let since, let marked, nil, let listed):
            // Answered row by row: a 200 is written as `sent` too (the
            // device matters to a write only for an invalid token).
            let outcome: DeliveryOutcome
            switch answer {
            case .accepted: outcome = DeliveryOutcome(deliveryID: id, deviceID: 0, status: .sent)
            case .exception(let o): outcome = o
            }
            fates[i] = .straggler(since: since, marked: marked, answer: outcome, listed: listed)
        default:
            preconditionFailure("row \(id) was answered twice")
        }
    }

    /// The settlement to write now, or nil while one is being written.
    /// `pressure`: the session's U is near its bound, so a row in flight that
    /// holds the watermark back becomes a straggler at once.
    mutating func settlement(at now: ContinuousClock.Instant, straggleAfter: Duration, pressure: Bool) -> Settlement? {
        guard !writing else { return nil }
        var through = committedThrough
        var stragglerRows: [Int] = []
        // The watermark goes on over 200s, exceptions and stragglers, up to a
        // row in flight that has not held it back long enough.
        scan: while through < sent {
            switch fates[through] {
            case .accepted, .answered, .written, .straggler:
                through += 1
            case .inFlight(let since):
                guard pressure || now - since >= straggleAfter else { break scan }
                stragglerRows.append(through)
                through += 1
            case .unsent:
                break scan
            }
        }
        // Every answer that is not 200 goes now, passed or not: it is durable
        // sooner, and never behind the watermark that passes it. So do the
        // answers of stragglers marked by earlier settlements.
        var exceptionRows: [Int] = []
        var answeredStragglerRows: [Int] = []
        for i in 0..<sent {
            switch fates[i] {
            case .answered(_, listed: false): exceptionRows.append(i)
            case .straggler(_, marked: true, answer: .some, listed: false): answeredStragglerRows.append(i)
            default: break
            }
        }
        let s = Settlement(
            settled: through == 0 ? after : rows[through - 1],
            exceptions: exceptionRows.map { i in
                guard case .answered(let o, _) = fates[i] else { preconditionFailure() }
                return o
            } + answeredStragglerRows.map { i in
                guard case .straggler(_, _, let answer?, _) = fates[i] else { preconditionFailure() }
                return answer
            },
            stragglers: stragglerRows.map { rows[$0] },
            through: through, exceptionRows: exceptionRows, stragglerRows: stragglerRows,
            answeredStragglerRows: answeredStragglerRows)
        guard through > committedThrough || !s.isEmpty else { return nil }
        writing = true
        for i in exceptionRows {
            if case .answered(let o, _) = fates[i] { fates[i] = .answered(o, listed: true) }
        }
        for i in stragglerRows {
            if case .inFlight(let since) = fates[i] { fates[i] = .straggler(since: since, marked: false, answer: nil, listed: true) }
        }
        for i in answeredStragglerRows {
            if case .straggler(let since, let marked, let answer, _) = fates[i] {
                fates[i] = .straggler(since: since, marked: marked, answer: answer, listed: true)
            }
        }
        return s
    }

    /// The settlement's transaction committed: its rows' fates are durable.
    mutating func committed(_ s: Settlement) {
        precondition(writing, "no settlement was being written")
        writing = false
        for i in committedThrough..<s.through {
            if case .accepted = fates[i] { unresolved -= 1 }
        }
        committedThrough = s.through
        for i in s.exceptionRows {
            fates[i] = .written
            unresolved -= 1
        }
        for i in s.stragglerRows {
            // Marked in flight: it stays unresolved until its answer is written.
            guard case .straggler(let since, _, let answer, _) = fates[i] else { preconditionFailure() }
            fates[i] = .straggler(since: since, marked: true, answer: answer, listed: false)
        }
        for i in s.answeredStragglerRows {
            fates[i] = .written
            unresolved -= 1
        }
    }

    /// The settlement's transaction did not commit (a transient fault): what
    /// it carried is pending again, and the next settlement proposes it anew.
    mutating func abandoned(_ s: Settlement) {
        precondition(writing, "no settlement was being written")
        writing = false
        for i in s.exceptionRows {
            if case .answered(let o, _) = fates[i] { fates[i] = .answered(o, listed: false) }
        }
        for i in s.stragglerRows {
            guard case .straggler(let since, _, let answer, _) = fates[i] else { preconditionFailure() }
            // Not marked: back to what it is without the mark.
            if let answer {
                fates[i] = answer.status == .sent ? .accepted : .answered(answer, listed: false)
            } else {
                fates[i] = .inFlight(since: since)
            }
        }
        for i in s.answeredStragglerRows {
            if case .straggler(let since, let marked, let answer, _) = fates[i] {
                fates[i] = .straggler(since: since, marked: marked, answer: answer, listed: false)
            }
        }
    }

    /// What the ledger says of the span now (its committed state): the rows
    /// a run taking it over would send again, those sent here among them
    /// being exactly `unresolved`.
    var resentByATakeover: [Int64] {
        var out: [Int64] = []
        for i in rows.indices {
            switch fates[i] {
            case .written: continue
            case .straggler(_, marked: true, _, _): out.append(rows[i])  // an in_flight row of a gone run
            default: if i >= committedThrough { out.append(rows[i]) }
            }
        }
        return out
    }

    /// Whether row `id` was sent by this span.
    func wasSent(_ id: Int64) -> Bool {
        guard let i = index(of: id) else { return false }
        return i < sent
    }

    private func index(of id: Int64) -> Int? {
        var lo = 0, hi = rows.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if rows[mid] < id { lo = mid + 1 } else { hi = mid }
        }
        return lo < rows.count && rows[lo] == id ? lo : nil
    }
}
