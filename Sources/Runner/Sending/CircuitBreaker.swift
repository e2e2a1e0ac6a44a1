import HeraldCore

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

    /// What another campaign's sessions learnt: its breakers (the later
    /// word on each host) and the apps refused.
    mutating func merge(_ other: APNsBreakers) {
        byHost.merge(other.byHost) { _, theirs in theirs }
        refusedApps.merge(other.refusedApps) { ours, _ in ours }
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
