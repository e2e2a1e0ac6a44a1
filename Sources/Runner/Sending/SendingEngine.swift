import APNs
import Foundation
import HeraldCore
import Lifecycle
import Logging
import Store

/// Drives `SendingSession`s for one source until it is done, paused,
/// cancelled, expired, stopped, or an outage outlasts its budget: the thin
/// loop that does the I/O the session decides on.
struct SendingEngine: Sendable {
    let transport: any PushTransport
    let options: RunOptions
    /// nil for sources whose rows no other process can claim (test sends).
    let leases: LeaseClock?
    let logger: Logger
    /// The run's limits shared with the sessions of overlapping campaigns (nil: its own settings alone).
    var budget: RunBudget? = nil
    /// The time the engine goes by: the run's.
    var clock: any HeraldClock { options.clock }

    /// Sends what `source` has; each session starts from the run's breakers and adds what it learnt.
    /// `progressed` is told the figures so far after each ledger write.
    /// Between sessions, `SendingRounds` decides and this carries it out.
    func send<Source: ClaimSource>(_ source: Source, breakers: RunBreakers, tally: inout SendTally,
                                   progressed: (SendTally) -> Void = { _ in }) async throws -> SendingFinish {
        var rounds = SendingRounds(settings: SendingRounds.Settings(options))
        var action = SendingRounds.Action.runSession
        var waitingFor: SendingRounds.Wait?
        while true {
            switch action {
            case .finish(let finish):
                return finish
            case .runSession:
                waitingFor = nil
                let end = try await withTaskExecutorPreference(transport.preferredExecutor) {
                    try await session(source, breakers: breakers, tally: &tally, progressed: progressed)
                }
                let now = clock.now
                action = rounds.sessionEnded(end, moreComing: source.moreComing, breakers: breakers.snapshot,
                                             maySend: leases?.maySend(at: now) ?? true, now: now)
            case .askNextDue:
                // Items back from transient answers wait out their backoff; a short one is waited for.
                let refused = breakers.snapshot.refusedApps.keys.sorted()
                action = rounds.nextDue(try await source.nextDue(excludingApps: refused), now: clock.now)
            case .sleep(let until, let cause):
                if waitingFor != cause { log(waiting: cause) }
                waitingFor = cause
                guard await pause(until: until) else { return .stopped }
                let now = clock.now
                action = rounds.woke(maySend: leases?.maySend(at: now) ?? true, now: now)
            }
        }
    }

    private func log(waiting cause: SendingRounds.Wait) {
        switch cause {
        case .more: break
        case .retries(let wait):
            if wait > .zero { logger.debug("waiting for retries", metadata: ["seconds": "\(wait.components.seconds)"]) }
        case .breaker(let host, let error):
            logger.warning("APNs unreachable; waiting before a probe", metadata: ["host": "\(host)", "error": "\(error ?? "")"])
        case .leases:
            logger.warning("leases could not be renewed; sending waits for the database")
        }
    }

    /// A duration in seconds with millisecond precision, for logs.
    static func seconds(_ d: Duration) -> String {
        String(format: "%.3f", d.inSeconds)
    }

    /// Sleeps until `instant`, waking early when the run is asked to stop; false then.
    func pause(until instant: ContinuousClock.Instant) async -> Bool {
        while clock.now < instant {
            if options.stop.isRequested { return false }
            do { try await clock.sleep(until: min(instant, clock.now + .milliseconds(100))) } catch { return false }
        }
        return !options.stop.isRequested
    }

    private enum Event<Item: ClaimedItem>: Sendable {
        case sent(Item, APNsResult)
        /// No notification could be built for it (no key for the sealed fields…).
        case skipped(Item, String)
        case tick
        /// A send slot the session waited for has come.
        case slot(ContinuousClock.Instant)
        case recorded((any Error)?)
        case claimed(Result<ClaimBatch<Item>, any Error>)
    }

    /// One session: carries out what the session decides, in one task group.
    /// Its figures and the breakers' states are handed back however it ends.
    private func session<Source: ClaimSource>(
        _ source: Source, breakers: RunBreakers, tally: inout SendTally, progressed: (SendTally) -> Void
    ) async throws -> SendingSession<Source.Item>.End {
        typealias Item = Source.Item
        let clock = self.clock
        let transport = self.transport
        let options = self.options
        let leases = self.leases
        var settings = SendingSession<Item>.Settings(options)
        if let limit = source.concurrencyLimit { settings.concurrency = max(1, min(settings.concurrency, limit)) }
        let start = breakers.snapshot
        var machine = SendingSession<Item>(settings: settings, breakers: start,
                                           epoch: leases?.epoch ?? 0, now: clock.now)
        let before = tally
        let budget = self.budget
        let member = budget?.join(demand: settings.concurrency)
        defer {
            breakers.learnt(machine.breakers, since: start)
            tally = before + machine.tally
            if let budget, let member { budget.leave(member) }
        }
        func conditions() -> SendingSession<Item>.Conditions {
            let now = clock.now
            let lease = leases?.check(at: now) ?? (maySend: true, epoch: 0)
            var c = SendingSession<Item>.Conditions(now: now, maySend: lease.maySend, epoch: lease.epoch,
                                                    stopRequestedAt: options.stop.requestedAt, expired: source.isExpired)
            if let budget, let member {
                c.share = budget.limits(for: member, inFlight: machine.inFlight, unrecorded: machine.unrecorded)
            }
            return c
        }

        // Where the session's time went while it waited, by cause (logged at its end).
        var waited = [Duration](repeating: .zero, count: SendingSession<Item>.WaitCause.allCases.count)
        let began = clock.now
        defer {
            if logger.logLevel <= .debug {
                var metadata: Logger.Metadata = ["seconds": "\(Self.seconds(clock.now - began))"]
                for cause in SendingSession<Item>.WaitCause.allCases {
                    metadata["waited_\(cause)"] = "\(Self.seconds(waited[cause.rawValue]))"
                }
                logger.debug("sending session ended", metadata: metadata)
            }
        }
        let end = try await withThrowingTaskGroup(of: Event<Item>.self) { group -> SendingSession<Item>.End in
            var ticking = false
            // The send slots a timer waits for.
            var slots = Set<ContinuousClock.Instant>()
            while true {
                let action = machine.next(conditions())
                switch action {
                case .claim(let after):
                    // Claims and writes are tasks of their own, awaited by a
                    // task of the group: cancelling the sends never cancels them.
                    let refused = machine.breakers.refusedApps.keys.sorted()
                    let claim = Task { try await source.claim(after: after, excludingApps: refused) }
                    group.addTask { .claimed(await claim.result) }
                case .send(let item):
                    // The notification is built (payload, reply token, sealed
                    // fields) in the send's own task, as many at once as the
                    // send window holds, while this loop goes on deciding; a
                    // costly one (sealed) on the cooperative pool's threads,
                    // every core, then back to the loop to send.
                    let offLoop = source.buildsOffLoop
                    group.addTask {
                        var notification: APNsNotification
                        let built = offLoop
                            ? await withTaskExecutorPreference(globalConcurrentExecutor) { source.notification(for: item) }
                            : source.notification(for: item)
                        switch built {
                        case .failure(let problem): return .skipped(item, problem.message)
                        case .success(let built): notification = built
                        }
                        if item.sendAt != nil {
                            // Paced (the session sends it at its slot): one attempt a slot; a
                            // transient answer goes back to the queue, and its next attempt
                            // takes a slot of its own.
                            notification.maxAttempts = 1
                        }
                        return .sent(item, await transport.send(notification))
                    }
                case .write(let batch):
                    let write = Task { try await source.record(batch) }
                    group.addTask {
                        do {
                            try await write.value
                            return .recorded(nil)
                        } catch {
                            return .recorded(error)
                        }
                    }
                case .shutdownTransport:
                    logger.warning("grace period over; ending what is still in flight",
                                   metadata: ["in_flight": "\(machine.inFlight)"])
                    await transport.shutdown()
                case .cancelSends:
                    group.cancelAll()
                case .end(let end):
                    group.cancelAll()
                    return end
                case .wait, .waitForSlot:
                    if case .waitForSlot(let slot) = action, !slots.contains(where: { $0 <= slot }) {
                        // One timer for the earliest slot waited for; a later one needs none yet.
                        slots.insert(slot)
                        group.addTask {
                            try? await clock.sleep(until: slot)
                            return .slot(slot)
                        }
                    }
                    if !ticking, !machine.sendsCancelled {
                        ticking = true
                        let interval = options.recordInterval
                        group.addTask {
                            try? await clock.sleep(until: clock.now + interval)
                            return .tick
                        }
                    }
                    let waitCause = machine.waitCause
                    let waitStart = clock.now
                    let next = try await group.next()
                    waited[waitCause.rawValue] += clock.now - waitStart
                    guard let event = next else { continue }
                    switch event {
                    case .tick:
                        ticking = false
                    case .slot(let slot):
                        slots.remove(slot)
                    case .sent(let item, let result):
                        machine.sent(item, result: result, at: clock.now)
                    case .skipped(let item, let reason):
                        machine.skipped(item, reason: reason)
                    case .recorded(let error):
                        machine.recorded()
                        if let error { throw error }
                        progressed(before + machine.tally)
                    case .claimed(let result):
                        machine.claimAnswered(try result.get())
                    }
                }
            }
        }
        progressed(before + machine.tally)
        return end
    }
}

extension SendLimits {
    /// The run's limits: `HERALD_CONCURRENCY` in flight, its repeat bound, a write at half of `HERALD_RECORD_EVERY`.
    init(_ options: RunOptions) {
        self.init(concurrency: options.concurrency, repeatBound: options.repeatBound, writeAt: max(1, options.recordEvery / 2))
    }
}

extension SendingSession.Settings {
    init(_ options: RunOptions) {
        let limits = SendLimits(options)
        self.init(concurrency: limits.concurrency, repeatBound: limits.repeatBound, writeAt: limits.writeAt,
                  recordInterval: options.recordInterval, stopGrace: options.stopGrace)
    }
}
