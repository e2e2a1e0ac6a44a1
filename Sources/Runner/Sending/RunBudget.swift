import NIOConcurrencyHelpers

/// The limits a sending session keeps: notifications in flight, sent ones
/// the ledger does not show yet (the repeat bound a kill -9 can cost), and
/// the outcomes gathered before a write starts.
struct SendLimits: Sendable, Hashable {
    var concurrency: Int
    var repeatBound: Int
    var writeAt: Int
}

/// A run's limits shared by the sessions that send at once (due campaigns
/// that overlap): one authority for the rule, on plain values.
///
/// Each of `sessions` is given an equal share of the run's limits, and never
/// more than what the others leave of them right now; so the run as a whole
/// keeps `HERALD_CONCURRENCY` in flight and the repeat bound of one session
/// however many campaigns overlap. A session over its share (another just
/// began) starts nothing until it is back under it; one left alone has the
/// whole run's limits again.
enum RunShare {
    static func limits(total: SendLimits, sessions: Int, othersInFlight: Int, othersUnrecorded: Int) -> SendLimits {
        let n = max(1, sessions)
        return SendLimits(
            concurrency: max(0, min(divided(total.concurrency, n), total.concurrency - othersInFlight)),
            repeatBound: max(0, min(divided(total.repeatBound, n), total.repeatBound - othersUnrecorded)),
            writeAt: max(1, total.writeAt / n))
    }

    /// `value / n` rounded up, so that n shares of a small total are not all 0.
    private static func divided(_ value: Int, _ n: Int) -> Int {
        (value + n - 1) / n
    }
}

/// The run's shared limits as the sessions of its overlapping campaigns
/// use them: each session says what it holds after every step and asks
/// for its limits before the next (`RunShare` decides).
final class RunBudget: Sendable {
    private struct Use {
        var inFlight = 0
        var unrecorded = 0
    }

    private struct State {
        var next = 0
        var sessions: [Int: Use] = [:]
    }

    let total: SendLimits
    private let state = NIOLockedValueBox(State())

    init(total: SendLimits) {
        self.total = total
    }

    /// A session begins; its id for the calls below.
    func join() -> Int {
        state.withLockedValue { s in
            s.next += 1
            s.sessions[s.next] = Use()
            return s.next
        }
    }

    /// A session ended: it holds nothing any more.
    func leave(_ id: Int) {
        state.withLockedValue { _ = $0.sessions.removeValue(forKey: id) }
    }

    /// What session `id` holds now, and its limits for the next step.
    func limits(for id: Int, inFlight: Int, unrecorded: Int) -> SendLimits {
        state.withLockedValue { s in
            s.sessions[id] = Use(inFlight: inFlight, unrecorded: unrecorded)
            var others = Use()
            for (other, use) in s.sessions where other != id {
                others.inFlight += use.inFlight
                others.unrecorded += use.unrecorded
            }
            return RunShare.limits(total: total, sessions: s.sessions.count,
                                   othersInFlight: others.inFlight, othersUnrecorded: others.unrecorded)
        }
    }
}
