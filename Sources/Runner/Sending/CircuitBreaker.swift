import HeraldCore
import NIOConcurrencyHelpers

/// A circuit breaker per APNs host. Consecutive transport failures (no
/// connection, TLS failure, timeouts) open it: nothing is sent to the host
/// until `reopenAt`; then one probe goes out, and its answer closes the
/// breaker or opens it again with a longer wait (1 s doubling to 30 s).
struct CircuitBreaker: Hashable {
    enum Gate: Hashable { case closed, open(until: ContinuousClock.Instant), probe, waitForProbe }

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

/// What a run learned of APNs, carried from session to session: a circuit
/// breaker per host, and the apps whose credential APNs refused.
struct APNsBreakers {
    var threshold: Int
    var byHost: [String: CircuitBreaker] = [:]
    /// Apps whose credential APNs refused in this run (a revoked key, an
    /// expired certificate…): their items are given back untried, and the
    /// run fails their campaigns with the reason.
    var refusedApps: [String: AppRefusal] = [:]

    init(threshold: Int) { self.threshold = threshold }

    /// What a session learnt since it began from `start`: the hosts whose
    /// breaker it changed (its word is the later one on them; the others
    /// keep what other sessions learnt meanwhile) and the apps refused.
    mutating func merge(_ session: APNsBreakers, since start: APNsBreakers) {
        for (host, breaker) in session.byHost where start.byHost[host] != breaker {
            byHost[host] = breaker
        }
        refusedApps.merge(session.refusedApps) { ours, _ in ours }
    }

    subscript(host: String) -> CircuitBreaker {
        get { byHost[host] ?? CircuitBreaker(threshold: threshold) }
        set { byHost[host] = newValue }
    }
}

/// APNs refused an app's credential: which app, in which environment, and its answer.
struct AppRefusal: Sendable, Hashable {
    var app: String
    var environment: APNsEnvironment
    /// e.g. `403 InvalidProviderToken`.
    var answer: String
}

/// The run's breakers, shared by the sessions of every campaign it sends at
/// once: each session starts from what the run knows, and what it learns is
/// the run's as soon as it ends.
final class RunBreakers: Sendable {
    private let state: NIOLockedValueBox<APNsBreakers>

    init(threshold: Int) {
        state = NIOLockedValueBox(APNsBreakers(threshold: threshold))
    }

    var snapshot: APNsBreakers { state.withLockedValue { $0 } }

    /// What a session that began from `start` ended with.
    func learnt(_ session: APNsBreakers, since start: APNsBreakers) {
        state.withLockedValue { $0.merge(session, since: start) }
    }
}
