import Foundation
import NIOConcurrencyHelpers

/// The run's own view of its leases: every delivery it holds expires no
/// earlier than `deadline` (claims and renewals set the expiry from the
/// database's clock after the local instant the deadline counts from). A
/// send may start only when it will be over, all attempts included, before
/// that. Once the deadline has passed (the process was stopped, the
/// database was away) another run may have taken any claim over: the
/// `epoch` moves on, and claims made in an older epoch are never sent.
public final class LeaseClock: Sendable {
    private struct State {
        var deadline: ContinuousClock.Instant
        var epoch = 0
        var lapsed = false
    }

    private let state: NIOLockedValueBox<State>
    let lease: Duration
    let sendSpan: Duration

    init(lease: Duration, sendSpan: Duration, renewedAt: ContinuousClock.Instant) {
        self.lease = lease
        self.sendSpan = sendSpan
        self.state = NIOLockedValueBox(State(deadline: renewedAt + lease))
    }

    /// A renewal asked at `asked` succeeded, and was seen at `seen`.
    func renewed(asked: ContinuousClock.Instant, seen: ContinuousClock.Instant) {
        state.withLockedValue { s in
            if seen >= s.deadline, !s.lapsed { s.epoch += 1 }
            s.deadline = max(s.deadline, asked + lease)
            s.lapsed = seen >= s.deadline
        }
    }

    /// Whether a send started now ends before any held lease can expire,
    /// and the epoch of the claims that may be sent.
    func check(at now: ContinuousClock.Instant) -> (maySend: Bool, epoch: Int) {
        state.withLockedValue { s in
            if now >= s.deadline, !s.lapsed {
                s.lapsed = true
                s.epoch += 1
            }
            return (now + sendSpan < s.deadline, s.epoch)
        }
    }

    func maySend(at now: ContinuousClock.Instant) -> Bool { check(at: now).maySend }
    var epoch: Int { state.withLockedValue { $0.epoch } }
}
