/// The engine's decisions between sending sessions, with no I/O: after a
/// session ends, whether the source is finished, or what to wait for before
/// the next one (more of an audience being written, retries coming due, an
/// open circuit breaker, leases that could not be renewed). `SendingEngine`
/// carries the actions out; the session itself decides everything within one.
struct SendingRounds {
    struct Settings: Sendable, Hashable {
        /// How long APNs may stay unreachable before the source ends in an outage.
        var outageBudget: Duration
        /// Items given back whose retry is due within this are waited for.
        var retryWait: Duration
        /// How long leases may stay unrenewable before the source ends in an outage.
        var databaseBudget: Duration
        /// How often an audience still being written is looked at again.
        var morePoll: Duration = .milliseconds(50)
        /// How often leases that could not be renewed are looked at again.
        var leasePoll: Duration = .milliseconds(250)
        /// Added to a retry's wait, so that the item is due when claimed.
        var retryMargin: Duration = .milliseconds(20)
    }

    /// What the engine waits for, to say so in its log.
    enum Wait: Sendable, Hashable {
        /// The audience is still being written.
        case more
        /// Items given back are due again soon.
        case retries(Duration)
        /// A host's breaker is open until the probe may go.
        case breaker(host: String, lastError: String?)
        /// The leases could not be renewed: sending waits for the database.
        case leases
    }

    enum Action: Sendable, Hashable {
        /// Run a sending session.
        case runSession
        /// Ask the source how long until its next item given back is due,
        /// then call `nextDue`.
        case askNextDue
        /// Sleep until then (a stop ends the source as `.stopped`), then
        /// call `woke`.
        case sleep(until: ContinuousClock.Instant, Wait)
        case finish(SendingFinish)
    }

    private enum Phase: Hashable {
        case sending
        case askingNextDue
        case waiting(Wait)
        /// Leases unrenewable since then.
        case fenced(since: ContinuousClock.Instant)
        case finished
    }

    let settings: Settings
    private var phase = Phase.sending

    init(settings: Settings) {
        self.settings = settings
    }

    /// A session ended as `end`. `moreComing`: the source's audience is
    /// still being written; `breakers`: what the run knows of APNs' hosts now.
    mutating func sessionEnded<Item>(_ end: SendingSession<Item>.End, moreComing: Bool, breakers: APNsBreakers,
                                     maySend: Bool, now: ContinuousClock.Instant) -> Action {
        precondition(phase == .sending, "a session ended while none ran")
        switch end {
        case .declaredGone:
            return finish(.outage("another run declared this run gone (it seemed to have stopped); the next run continues"))
        case .paused: return finish(.paused)
        case .cancelled: return finish(.cancelled)
        case .expired: return finish(.expired)
        case .stopped: return finish(.stopped)
        case .drained:
            if moreComing { return wait(until: now + settings.morePoll, .more) }
            phase = .askingNextDue
            return .askNextDue
        case .breakerOpen(let host):
            let breaker = breakers[host]
            if let since = breaker.outageSince, now - since >= settings.outageBudget {
                let seconds = (now - since).components.seconds
                return finish(.outage("APNs (\(host)) unreachable for \(seconds) s: \(breaker.lastError ?? "no connection")"))
            }
            return wait(until: breaker.reopenAt ?? now, .breaker(host: host, lastError: breaker.lastError))
        case .fenced:
            phase = .fenced(since: now)
            return leasesChecked(maySend: maySend, now: now)
        }
    }

    /// The source's answer to `.askNextDue`: how long until its next item
    /// given back is due (nil: none is left).
    mutating func nextDue(_ wait: Duration?, now: ContinuousClock.Instant) -> Action {
        precondition(phase == .askingNextDue, "an answer to a question not asked")
        guard let wait, wait <= settings.retryWait else { return finish(.done) }
        return self.wait(until: now + max(wait, .zero) + settings.retryMargin, .retries(wait))
    }

    /// A `.sleep` ended; `maySend`: whether the leases allow a send now.
    mutating func woke(maySend: Bool, now: ContinuousClock.Instant) -> Action {
        switch phase {
        case .fenced:
            return leasesChecked(maySend: maySend, now: now)
        case .waiting:
            phase = .sending
            return .runSession
        case .sending, .askingNextDue, .finished:
            preconditionFailure("woke while not waiting")
        }
    }

    private mutating func leasesChecked(maySend: Bool, now: ContinuousClock.Instant) -> Action {
        guard case .fenced(let since) = phase else { preconditionFailure("leases checked while not fenced") }
        if maySend {
            phase = .sending
            return .runSession
        }
        if now - since >= settings.databaseBudget {
            return finish(.outage("the database was unavailable for more than \(settings.databaseBudget.components.seconds) s: the run's leases could not be renewed"))
        }
        return .sleep(until: now + settings.leasePoll, .leases)
    }

    private mutating func wait(until instant: ContinuousClock.Instant, _ cause: Wait) -> Action {
        phase = .waiting(cause)
        return .sleep(until: instant, cause)
    }

    private mutating func finish(_ finish: SendingFinish) -> Action {
        phase = .finished
        return .finish(finish)
    }
}

extension SendingRounds.Settings {
    init(_ options: RunOptions) {
        self.init(outageBudget: options.outageBudget, retryWait: options.retryWait, databaseBudget: options.databaseBudget)
    }
}
