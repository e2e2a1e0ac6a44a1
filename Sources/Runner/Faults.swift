import Foundation
import NIOConcurrencyHelpers
import Store

/// A request to stop (SIGTERM, SIGINT), shared by the signal handler and the run.
public final class StopSignal: Sendable {
    private let requested = NIOLockedValueBox<ContinuousClock.Instant?>(nil)

    public init() {}

    /// Asks the run to stop; returns false when it was asked before.
    @discardableResult
    public func request() -> Bool {
        requested.withLockedValue { at in
            guard at == nil else { return false }
            at = ContinuousClock().now
            return true
        }
    }

    public var isRequested: Bool { requested.withLockedValue { $0 != nil } }
    public var requestedAt: ContinuousClock.Instant? { requested.withLockedValue { $0 } }
}

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

/// A circuit breaker per APNs host. Consecutive transport failures (no
/// connection, TLS failure, timeouts) open it: nothing is sent to the host
/// until `reopenAt`; then one probe goes out, and its answer closes the
/// breaker or opens it again with a longer wait (1 s doubling to 30 s).
struct CircuitBreaker {
    enum Gate { case closed, open(until: ContinuousClock.Instant), probe, waitForProbe }

    var threshold: Int
    var consecutive = 0
    var reopenAt: ContinuousClock.Instant?
    var outageSince: ContinuousClock.Instant?
    var wait: Duration = .seconds(1)
    var probing = false
    var lastError: String?

    mutating func record(transportFailure: Bool, error: String?, at now: ContinuousClock.Instant) {
        guard transportFailure else {
            consecutive = 0
            reopenAt = nil
            outageSince = nil
            wait = .seconds(1)
            probing = false
            return
        }
        lastError = error
        consecutive += 1
        if probing || (reopenAt == nil && consecutive >= threshold) {
            probing = false
            if outageSince == nil { outageSince = now }
            reopenAt = now + wait
            wait = min(wait * 2, .seconds(30))
        }
    }

    mutating func gate(at now: ContinuousClock.Instant, probeInFlight: Bool) -> Gate {
        guard let reopenAt else { return .closed }
        if now < reopenAt { return .open(until: reopenAt) }
        if probeInFlight || probing { return .waitForProbe }
        probing = true
        return .probe
    }
}

struct APNsBreakers {
    var threshold: Int
    var byHost: [String: CircuitBreaker] = [:]

    init(threshold: Int) { self.threshold = threshold }

    subscript(host: String) -> CircuitBreaker {
        get { byHost[host] ?? CircuitBreaker(threshold: threshold) }
        set { byHost[host] = newValue }
    }
}

/// What a run carries from campaign to campaign.
struct RunState {
    var runID: Int64
    var leases: LeaseClock
    var breakers: APNsBreakers
    var figures = RunFigures()
    var interruption: RunInterruption?
}
