import Store

/// The spans a campaign's sending session holds, on plain values (docs/DESIGN.md, "The ledger
/// by ranges"): which of their rows APNs answered, and what each write of outcomes settles.
///
/// The session hands over outcomes to write, and counts them as unrecorded until the write
/// commits (`SendingSession.unrecorded`). So a settlement makes durable every outcome it is
/// given, and nothing else is needed for the repeat bound:
/// - a span's watermark moves to the highest row answered in it: every row at or below it was
///   sent (a span's rows are sent in id order), so each row there is answered 200 (passed),
///   answered otherwise (an exception, written), or still in flight (a straggler, written
///   `in_flight` under the run, counted in flight by the session until answered);
/// - a straggler's answer is written row by row, as any claimed row's is.
struct SpanBook {
    private struct Span {
        var claim: SpanClaim
        /// The span's rows in id order, with their devices.
        var rows: [SpanRow]
        /// Rows answered, or written as stragglers.
        var done: Set<Int64> = []
        /// The watermark asked for so far.
        var settled: Int64
    }

    private var spans: [Int64: Span] = [:]
    /// Each span row held, by its span's upper bound.
    private var spanOf: [Int64: Int64] = [:]
    /// Rows written `in_flight` behind a watermark: their answers go row by row.
    private var stragglers: Set<Int64> = []

    /// A span claimed, with its rows (in id order).
    mutating func add(_ claim: SpanClaim, rows: [SpanRow]) {
        spans[claim.through] = Span(claim: claim, rows: rows, settled: claim.after)
        for row in rows { spanOf[row.id] = claim.through }
    }

    /// Splits a write's outcomes into the settlements of the spans they answer and the
    /// outcomes written row by row (rows claimed row by row, and stragglers' answers).
    mutating func settle(_ outcomes: [DeliveryOutcome]) -> (settlements: [SpanSettlement], rows: [DeliveryOutcome]) {
        var rows: [DeliveryOutcome] = []
        var answered: [Int64: [DeliveryOutcome]] = [:]
        for outcome in outcomes {
            let id = outcome.deliveryID
            if stragglers.remove(id) != nil {
                spanOf[id] = nil
                rows.append(outcome)
            } else if let through = spanOf[id] {
                answered[through, default: []].append(outcome)
                spanOf[id] = nil
            } else {
                rows.append(outcome)
            }
        }
        var settlements: [SpanSettlement] = []
        for (through, outcomes) in answered.sorted(by: { $0.key < $1.key }) {
            guard var span = spans[through] else { continue }
            let highest = outcomes.map(\.deliveryID).max() ?? span.settled
            let settled = max(span.settled, highest)
            for o in outcomes { span.done.insert(o.deliveryID) }
            var late: [SpanRow] = []
            for row in span.rows where row.id <= settled && !span.done.contains(row.id) {
                late.append(row)
                span.done.insert(row.id)
                stragglers.insert(row.id)
            }
            span.settled = settled
            let exceptions = outcomes.filter { $0.status != .sent }
            settlements.append(SpanSettlement(span: span.claim, settled: settled, exceptions: exceptions, stragglers: late))
            if span.done.count == span.rows.count {
                spans[through] = nil
            } else {
                spans[through] = span
            }
        }
        return (settlements, rows)
    }

    /// Spans with rows not yet settled.
    var open: Int { spans.count }
}
