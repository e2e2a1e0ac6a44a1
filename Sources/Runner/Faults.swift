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
/// earlier than `renewedAt + lease` (claims and renewals set the expiry
/// from the database's clock after the local instant was taken). A send
/// may start only when it will be over, all attempts included, before that.
public final class LeaseClock: Sendable {
    private let deadline: NIOLockedValueBox<ContinuousClock.Instant>
    let lease: Duration
    let sendSpan: Duration

    init(lease: Duration, sendSpan: Duration, renewedAt: ContinuousClock.Instant) {
        self.lease = lease
        self.sendSpan = sendSpan
        self.deadline = NIOLockedValueBox(renewedAt + lease)
    }

    func renewed(at instant: ContinuousClock.Instant) {
        deadline.withLockedValue { $0 = max($0, instant + lease) }
    }

    /// True while a send started now ends before any held lease can expire.
    func maySend(at now: ContinuousClock.Instant) -> Bool {
        now + sendSpan < deadline.withLockedValue { $0 }
    }
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
