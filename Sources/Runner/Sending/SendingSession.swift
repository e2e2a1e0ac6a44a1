import APNs
import HeraldCore
import Store

/// A ledger row claimed for sending, whatever its source (a campaign's
/// delivery, a config refresh push, a test send).
protocol ClaimedItem: Sendable {
    var deliveryID: Int64 { get }
    var deviceID: Int64 { get }
    /// Which APNs host it goes to.
    var environment: APNsEnvironment { get }
    /// The device's app (`apps.name`): its topic and credential.
    var app: String { get }
    /// Attempts recorded before this claim, for the retry backoff.
    var priorAttempts: Int { get }
    /// Its send slot when its campaign is paced (nil: at once).
    var sendAt: ContinuousClock.Instant? { get }
}

extension ClaimedItem {
    var host: String { environment.host }
    var sendAt: ContinuousClock.Instant? { nil }
}

/// What one claim took: the rows, where the next claim reads on, and why
/// there were none.
struct ClaimBatch<Item: ClaimedItem>: Sendable {
    var items: [Item]
    /// Where the next claim reads on (the last row this one read).
    var end: Int64 = 0
    /// The campaign's status when nothing was claimed (a pause or cancel shows here).
    var status: CampaignStatus?
    /// Another run declared this one gone: what it held is another's now.
    var runGone = false
}

/// The figures of one sending session.
struct SendTally: Sendable, Hashable {
    var sent = 0
    var invalid = 0
    var failed = 0
    var skipped = 0
    /// Given back to the queue: transient answers, unsent claims.
    var requeued = 0
    /// Attempts beyond the first.
    var retried = 0

    var done: Int { sent + invalid + failed + skipped }

    mutating func count(_ outcome: DeliveryOutcome) {
        retried += max(0, outcome.attempts - 1)
        switch outcome.status {
        case .sent: sent += 1
        case .invalid: invalid += 1
        case .failed: failed += 1
        case .skipped: skipped += 1
        case .queued, .retry: requeued += 1
        }
    }

    static func + (a: SendTally, b: SendTally) -> SendTally {
        SendTally(sent: a.sent + b.sent, invalid: a.invalid + b.invalid, failed: a.failed + b.failed,
                  skipped: a.skipped + b.skipped, requeued: a.requeued + b.requeued, retried: a.retried + b.retried)
    }
}

/// The decisions of one sending session, with no I/O: claim, send, record,
/// give back, end. `SendingEngine` carries the actions out and reports what
/// happened; every source of claims (campaign deliveries, config refresh
/// pushes, test sends) runs through it, with the same circuit breaker,
/// lease fencing, bound on repeats and stop grace.
///
/// Three things overlap so that neither the database's commits nor APNs'
/// answers wait for the other: the sends in flight, one ledger write (the
/// outcomes gathered while the previous write committed) and one claim of
/// the next batch (started as soon as the current one is taken). Outcomes
/// not yet written, together with the sends in flight, never exceed
/// `repeatBound`: a send starts only below it. A session ends with nothing
/// in flight, its unsent claims given back and every outcome written.
struct SendingSession<Item: ClaimedItem> {
    struct Settings: Sendable {
        /// Notifications in flight at once.
        var concurrency: Int
        /// The most notifications APNs can have accepted that the ledger does not show yet.
        var repeatBound: Int
        /// A write starts once this many outcomes wait…
        var writeAt: Int
        /// …or this long after the last one started.
        var recordInterval: Duration
        /// How long a stopping session lets what is in flight finish.
        var stopGrace: Duration

        var limits: SendLimits { SendLimits(concurrency: concurrency, repeatBound: repeatBound, writeAt: writeAt) }
    }

    /// Why a session ended.
    enum End: Sendable, Hashable {
        /// Nothing claimable now.
        case drained
        case paused, cancelled, expired
        /// Asked to stop (SIGTERM, SIGINT, a service group's shutdown).
        case stopped
        /// A host's circuit breaker is open.
        case breakerOpen(String)
        /// The leases could not be renewed in time: no send may start.
        case fenced
        /// Another run declared this one gone: what it held is another's now.
        case declaredGone
    }

    /// What the world looks like at a step: the driver reads it before each one.
    struct Conditions {
        var now: ContinuousClock.Instant
        /// A send started now would end before any held lease can expire.
        var maySend = true
        /// The lease epoch (it moves on when a lease lapsed).
        var epoch = 0
        /// When a stop was asked for, if it was.
        var stopRequestedAt: ContinuousClock.Instant?
        /// The notifications of this source are past their expiry.
        var expired = false
        /// This session's share of the run's limits, when campaigns overlap
        /// (`RunBudget`); its own settings bound it too. nil: its settings alone.
        var share: SendLimits?
    }

    /// What a `.wait` waits for, for the session's account of its time.
    enum WaitCause: Int, CaseIterable, Sendable {
        /// `HERALD_CONCURRENCY` (or the session's share of it) is in flight.
        case window
        /// Sent outcomes not yet written fill the repeat bound: a write must commit first.
        case repeatBound
        /// Everything claimed is sent and the next claim has not answered.
        case claim
        /// A probe of a host whose breaker half-opened, or an ending session draining.
        case other
        /// The next item of a paced campaign waits for its send slot.
        case slot
    }

    enum Action {
        /// Claim the next batch, reading on after this row.
        case claim(after: Int64)
        /// Send this item (the driver reports `sent` or `skipped`).
        case send(Item)
        /// Write these outcomes to the ledger (the driver reports `recorded`).
        case write([DeliveryOutcome])
        /// The stop's grace is over: end what is in flight now.
        case shutdownTransport
        /// A lease lapsed: no retry of what is in flight may go out.
        case cancelSends
        /// Wait for the next event (an answer, a write or claim ending, a tick).
        case wait
        /// Wait for the next event, or until this instant: the next item's send slot.
        case waitForSlot(ContinuousClock.Instant)
        case end(End)
    }

    /// Where a session is. Each phase holds what only it needs, as the flags it replaces could not say.
    enum Phase {
        /// Claiming and sending.
        case sending
        /// Ending: what is in flight finishes, then what was claimed and not sent goes back.
        case draining(Draining)
        /// What was claimed and not sent is given back: the last writes remain, then the end.
        case flushing(End)
    }

    struct Draining {
        let end: End
        /// How long claims given back wait (an open breaker's reopening).
        let giveBackDelay: Double
        /// The stop's grace ran out and the transport was told to end what is in flight.
        var transportShutDown = false
        /// A lease lapsed: the sends in flight were cancelled, so none retries.
        var sendsCancelled = false
    }

    /// The claim of the next batch, asked for while the current one is sent.
    enum Ahead {
        case none
        case asked
        case answered(ClaimBatch<Item>)
    }

    /// How late a paced item may still leave after its slot; later, the slot is given up and
    /// the item goes back to the queue untried. So a window of the pace holds at most its
    /// slots and 250 ms more of them (docs/marketers.md, "Pace").
    static var missedSlot: Duration { .milliseconds(250) }

    let settings: Settings
    /// Claims of this session are sent only while no lease lapsed since it began.
    let epoch: Int
    private(set) var breakers: APNsBreakers
    private(set) var tally = SendTally()

    private(set) var inFlight = 0
    /// Why the last `.wait` was decided.
    private(set) var waitCause = WaitCause.other
    /// The limits of the current step: the settings', within the run's share.
    private var limits: SendLimits
    /// Sent and not yet in the ledger: what a kill -9 now could send again.
    var unrecorded: Int { inFlight + pending.count + writing }
    /// Outcomes in the ledger write under way.
    private(set) var writing = 0
    private var pending: [DeliveryOutcome] = []
    private var lastWrite: ContinuousClock.Instant
    /// The batch being sent: `claimed[next...]` is not sent yet.
    private var claimed: [Item] = []
    private var next = 0
    private var ahead = Ahead.none
    /// Where the next claim reads on.
    private var cursor: Int64 = 0
    private(set) var phase = Phase.sending

    /// Why the session is ending, once it is.
    var ending: End? {
        switch phase {
        case .sending: nil
        case .draining(let draining): draining.end
        case .flushing(let end): end
        }
    }

    /// The sends in flight were cancelled (a lease lapsed while the session ended).
    var sendsCancelled: Bool {
        if case .draining(let draining) = phase { return draining.sendsCancelled }
        return false
    }

    init(settings: Settings, breakers: APNsBreakers, epoch: Int, now: ContinuousClock.Instant) {
        self.settings = settings
        self.limits = settings.limits
        self.breakers = breakers
        self.epoch = epoch
        self.lastWrite = now
        pending.reserveCapacity(settings.repeatBound)
    }

    // MARK: events

    mutating func claimAnswered(_ batch: ClaimBatch<Item>) {
        cursor = batch.end
        ahead = .answered(batch)
    }

    /// APNs answered (or the client gave up on) one item sent.
    mutating func sent(_ item: Item, result: APNsResult, at now: ContinuousClock.Instant) {
        inFlight -= 1
        let decision = DeliveryPolicy.decide(result, deliveryID: item.deliveryID, deviceID: item.deviceID,
                                             priorAttempts: item.priorAttempts)
        breakers[item.host].record(transportFailure: decision.transportFailure, error: decision.outcome.error, at: now)
        if let refusal = decision.fatal, breakers.refusedApps[item.app] == nil {
            // APNs refused the app's credential: that app's items wait, queued,
            // for a person (its campaigns fail with the reason); the others go on.
            breakers.refusedApps[item.app] = AppRefusal(app: item.app, environment: item.environment, answer: refusal)
        }
        collect(decision.outcome)
    }

    /// An item the driver could not build a notification for (no key for
    /// its sealed fields, say): recorded as skipped, never sent.
    mutating func skipped(_ item: Item, reason: String) {
        inFlight -= 1
        collect(DeliveryOutcome(deliveryID: item.deliveryID, deviceID: item.deviceID, status: .skipped,
                                error: reason, attempts: 0))
    }

    /// The ledger write under way ended (a failed write ends the session by the driver's throw).
    mutating func recorded() {
        writing = 0
    }

    private mutating func collect(_ outcome: DeliveryOutcome) {
        pending.append(outcome)
        tally.count(outcome)
    }

    // MARK: decisions

    /// The next thing to do.
    mutating func next(_ c: Conditions) -> Action {
        limits = c.share.map { share in
            SendLimits(concurrency: min(settings.concurrency, share.concurrency),
                       repeatBound: min(settings.repeatBound, share.repeatBound),
                       writeAt: min(settings.writeAt, share.writeAt))
        } ?? settings.limits
        if let write = writeIfDue(c.now, force: false) { return write }
        switch phase {
        case .sending: break
        case .draining(let draining): return drain(draining, c)
        case .flushing(let end): return flush(end, c)
        }
        while true {
            if c.stopRequestedAt != nil { return finish(.stopped, c) }
            if !c.maySend || c.epoch != epoch { return finish(.fenced, c) }
            // The claim ahead found the campaign paused, cancelled or its approval withdrawn:
            // the batch under way stops too, and what it has not sent goes back.
            if case .answered(let batch) = ahead, batch.items.isEmpty {
                switch batch.status {
                case .paused?: return finish(.paused, c)
                case .cancelled?: return finish(.cancelled, c)
                default: break
                }
            }
            if inFlight >= limits.concurrency || unrecorded >= limits.repeatBound {
                waitCause = inFlight >= limits.concurrency ? .window : .repeatBound
                return .wait
            }
            if next == claimed.count {
                let ready: ClaimBatch<Item>
                switch ahead {
                case .none:
                    ahead = .asked
                    return .claim(after: cursor)
                case .asked:
                    waitCause = .claim
                    return .wait
                case .answered(let batch):
                    ready = batch
                    ahead = .none
                }
                if ready.runGone { return finish(.declaredGone, c) }
                if ready.items.isEmpty {
                    switch ready.status {
                    case .paused?: return finish(.paused, c)
                    case .cancelled?: return finish(.cancelled, c)
                    default: return finish(.drained, c)
                    }
                }
                claimed = ready.items
                next = 0
                if c.expired { return finish(.expired, c) }
                continue
            }
            // The next batch is claimed while this one is sent: a claim of
            // 1,000 rows takes about as long as sending them.
            if case .none = ahead {
                ahead = .asked
                return .claim(after: cursor)
            }
            let item = claimed[next]
            if let refusal = breakers.refusedApps[item.app] {
                // Its app's credential was refused earlier in this run: given back untried.
                next += 1
                collect(DeliveryOutcome(deliveryID: item.deliveryID, deviceID: item.deviceID, status: .queued,
                                        error: refusal.answer, attempts: 0))
                continue
            }
            if let slot = item.sendAt {
                // Paced: it leaves at its slot, not before; a slot long past (the process
                // was stopped or starved) is given up, as a pace never catches up.
                if c.now < slot {
                    waitCause = .slot
                    return .waitForSlot(slot)
                }
                if c.now - slot > Self.missedSlot {
                    next += 1
                    collect(DeliveryOutcome(deliveryID: item.deliveryID, deviceID: item.deviceID, status: .queued,
                                            attempts: 0))
                    continue
                }
            }
            let host = item.host
            switch breakers[host].gate(at: c.now, probeInFlight: false) {
            case .closed, .probe:
                next += 1
                inFlight += 1
                return .send(item)
            case .waitForProbe:
                guard inFlight == 0 else {
                    waitCause = .other
                    return .wait
                }
                breakers[host].probing = false
            case .open(let until):
                return finish(.breakerOpen(host), c, giveBackDelay: max(0, Double((until - c.now).components.seconds)))
            }
        }
    }

    private mutating func writeIfDue(_ now: ContinuousClock.Instant, force: Bool) -> Action? {
        guard writing == 0, !pending.isEmpty,
              force || pending.count >= limits.writeAt || now - lastWrite >= settings.recordInterval else { return nil }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        writing = batch.count
        lastWrite = now
        return .write(batch)
    }

    private mutating func finish(_ end: End, _ c: Conditions, giveBackDelay: Double = 0) -> Action {
        drain(Draining(end: end, giveBackDelay: giveBackDelay), c)
    }

    /// Ending: what is in flight finishes (within the stop's grace) and the
    /// claim asked for answers; then unsent claims go back to the queue as they were.
    private mutating func drain(_ draining: Draining, _ c: Conditions) -> Action {
        var draining = draining
        if let action = stillDraining(&draining, c) {
            phase = .draining(draining)
            return action
        }
        var unsent = Array(claimed[next...])
        if case .answered(let batch) = ahead { unsent += batch.items }
        for item in unsent {
            collect(DeliveryOutcome(deliveryID: item.deliveryID, deviceID: item.deviceID, status: .queued,
                                    attempts: 0, delay: draining.giveBackDelay))
        }
        claimed = []
        next = 0
        ahead = .none
        phase = .flushing(draining.end)
        return flush(draining.end, c)
    }

    /// What an ending session still waits for or does before it gives back; nil once nothing.
    private mutating func stillDraining(_ draining: inout Draining, _ c: Conditions) -> Action? {
        waitCause = .other
        if draining.end == .stopped, inFlight > 0, let asked = c.stopRequestedAt {
            if c.now < asked + settings.stopGrace { return .wait }
            if !draining.transportShutDown {
                draining.transportShutDown = true
                return .shutdownTransport
            }
        }
        if draining.end == .fenced, c.epoch != epoch, !draining.sendsCancelled {
            // What is in flight may belong to another run now: no retry of
            // it may go out; requests written are waited for.
            draining.sendsCancelled = true
            return .cancelSends
        }
        if case .asked = ahead { return .wait }
        if inFlight > 0 || writing > 0 { return .wait }
        return nil
    }

    /// Every outcome written, then the end.
    private mutating func flush(_ end: End, _ c: Conditions) -> Action {
        waitCause = .other
        if writing > 0 { return .wait }
        if let write = writeIfDue(c.now, force: true) { return write }
        return .end(end)
    }
}
