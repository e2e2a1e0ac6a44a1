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
/// The run's concurrency is shared max-min fairly by what each session can
/// use (its demand: the run's concurrency, or less for a paced campaign):
/// a session that needs less than an equal share gets what it needs and the
/// others split the rest. Its repeat bound and write size follow the same
/// fraction. Nobody is ever given more than the others leave right now, so
/// the run as a whole keeps `HERALD_CONCURRENCY` in flight and the repeat
/// bound of one session however many campaigns overlap. A session over its
/// share (another just began) starts nothing until it is back under it; one
/// left alone has the whole run's limits again.
enum RunShare {
    static func limits(total: SendLimits, demand: Int, othersDemands: [Int],
                       othersInFlight: Int, othersUnrecorded: Int) -> SendLimits {
        let share = fairShare(of: total.concurrency, demand: demand, othersDemands: othersDemands)
        let fraction = Double(share) / Double(max(1, total.concurrency))
        return SendLimits(
            concurrency: max(0, min(share, total.concurrency - othersInFlight)),
            repeatBound: max(0, min(Int((Double(total.repeatBound) * fraction).rounded(.up)), total.repeatBound - othersUnrecorded)),
            writeAt: max(1, Int(Double(total.writeAt) * fraction)))
    }

    /// This session's max-min fair part of `total` among all the demands:
    /// the smallest demands are met in full while they are below an equal
    /// split of what is left; the others share the rest equally (rounded up,
    /// so that no session's part is 0).
    static func fairShare(of total: Int, demand: Int, othersDemands: [Int]) -> Int {
        var left = total
        var waiting = othersDemands.count + 1
        for other in othersDemands.sorted() where other < demand {
            let equal = (left + waiting - 1) / waiting
            guard other < equal else { break }
            left -= other
            waiting -= 1
        }
        return max(1, min(demand, (left + waiting - 1) / waiting))
    }
}

/// The run's shared limits as the sessions of its overlapping campaigns
/// use them: each session says what it holds after every step and asks
/// for its limits before the next (`RunShare` decides).
final class RunBudget: Sendable {
    private struct Use {
        var demand: Int
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

    /// A session begins, able to use `demand` sends in flight at most; its id for the calls below.
    func join(demand: Int) -> Int {
        state.withLockedValue { s in
            s.next += 1
            s.sessions[s.next] = Use(demand: demand)
            return s.next
        }
    }

    /// The sessions sending now.
    var sessions: Int { state.withLockedValue { $0.sessions.count } }

    /// A session ended: it holds nothing any more.
    func leave(_ id: Int) {
        state.withLockedValue { _ = $0.sessions.removeValue(forKey: id) }
    }

    /// What session `id` holds now, and its limits for the next step.
    func limits(for id: Int, inFlight: Int, unrecorded: Int) -> SendLimits {
        state.withLockedValue { s in
            let demand = s.sessions[id]?.demand ?? total.concurrency
            s.sessions[id] = Use(demand: demand, inFlight: inFlight, unrecorded: unrecorded)
            var demands: [Int] = []
            var (inFlight, unrecorded) = (0, 0)
            for (other, use) in s.sessions where other != id {
                demands.append(use.demand)
                inFlight += use.inFlight
                unrecorded += use.unrecorded
            }
            return RunShare.limits(total: total, demand: demand, othersDemands: demands,
                                   othersInFlight: inFlight, othersUnrecorded: unrecorded)
        }
    }
}
