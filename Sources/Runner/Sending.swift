import APNs
import Foundation
import HeraldCore
import Logging
import Store

/// What sends a notification: the APNs client, or a test double.
public protocol PushTransport: Sendable {
    func send(_ notification: APNsNotification) async -> APNsResult
    /// Ends what is in flight at once (a stop whose grace period is over).
    func shutdown() async
    /// Where a run's sending session is cheapest to run (nil: anywhere).
    var preferredExecutor: (any TaskExecutor)? { get }
}

extension PushTransport {
    public var preferredExecutor: (any TaskExecutor)? { nil }
}

extension APNsClient: PushTransport {
    /// The client's event loop: a session run there hands each request to
    /// its connection and takes each answer back without a thread switch
    /// (measured: 47 µs of CPU per notification on the default executor
    /// against 23 µs on the loop, a 200,000-device run on the nginx sink).
    public var preferredExecutor: (any TaskExecutor)? { taskExecutor }
}

/// A run stops at once when APNs refuses the provider itself (a wrong key,
/// team or topic): every later request would be refused the same way. A
/// person must fix the configuration (exit status 1).
public struct RunAborted: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }
}

extension CampaignRun {
    /// Why a campaign's sending ended in this run.
    enum CampaignEnd {
        case done, paused, cancelled, expired, stopped
        case outage(String)
    }

    /// Why one sending session (one task group) ended. Every session ends
    /// with nothing in flight, its unsent claims given back and every
    /// outcome recorded.
    enum SessionEnd {
        /// Nothing claimable now.
        case drained
        case paused, cancelled, expired, stopped
        /// A host's circuit breaker is open.
        case breakerOpen(String)
        /// The leases could not be renewed in time: no send may start.
        case fenced
        /// APNs refused the provider itself.
        case fatal(String)
        /// Another run declared this one gone (`runs.status` is no longer
        /// running): what it held is another's now.
        case declaredGone
    }

    /// Claims, sends and records the campaign's queued deliveries until none
    /// is left, with at most `concurrency` notifications in flight; waits
    /// out APNs outages (circuit breaker) and lease renewals within their
    /// budgets, and short retry backoffs.
    ///
    /// `snapshotting`, when the campaign's audience is still being written:
    /// sending waits for the next slice instead of ending.
    func send(_ prepared: PreparedCampaign, summary: inout CampaignSummary, state: inout RunState,
              logger: Logger, snapshotting: SnapshotWriting? = nil) async throws {
        let end = try await sendCampaign(prepared, summary: &summary, state: &state, logger: logger,
                                         snapshotting: snapshotting)
        switch end {
        case .done:
            let store = self.store
            let id = prepared.campaign.id
            if try await db("complete the campaign", { try await store.completeIfDone(id) }) {
                summary.completed = true
                logger.info("campaign completed")
            }
        case .paused:
            logger.notice("campaign paused; its queued deliveries wait")
        case .cancelled:
            logger.notice("campaign cancelled; its queued deliveries were cancelled")
        case .expired:
            logger.notice("campaign expired")
        case .stopped:
            state.interruption = .stopped
        case .outage(let why):
            logger.error("run stopped by an outage", metadata: ["reason": "\(why)"])
            state.interruption = .outage(why)
        }
    }

    private func sendCampaign(_ prepared: PreparedCampaign, summary: inout CampaignSummary, state: inout RunState,
                              logger: Logger, snapshotting: SnapshotWriting?) async throws -> CampaignEnd {
        let clock = ContinuousClock()
        let store = self.store
        let campaignID = prepared.campaign.id
        while true {
            let ended = try await withTaskExecutorPreference(transport?.preferredExecutor) {
                try await session(prepared, summary: &summary, state: &state, logger: logger)
            }
            switch ended {
            case .fatal(let text):
                throw RunAborted(reason: "APNs refused the provider (\(text)); check APNS_KEY_PATH, APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC")
            case .declaredGone:
                return .outage("another run declared this run gone (it seemed to have stopped); the next run continues")
            case .paused: return .paused
            case .cancelled: return .cancelled
            case .expired: return .expired
            case .stopped: return .stopped
            case .drained:
                if let snapshotting, snapshotting.isWriting {
                    // The next slice of the audience is being written.
                    guard await pause(for: .milliseconds(50)) else { return .stopped }
                    continue
                }
                // Deliveries back from transient answers wait out their
                // backoff; a short one is waited for here.
                guard let wait = try await db("find the next due delivery", { try await store.nextDue(campaign: campaignID) }),
                      wait <= options.retryWait else { return .done }
                if wait > .zero {
                    logger.debug("waiting for retries", metadata: ["seconds": "\(wait.components.seconds)"])
                }
                guard await pause(for: wait + .milliseconds(20)) else { return .stopped }
            case .breakerOpen(let host):
                let breaker = state.breakers[host]
                let now = clock.now
                if let since = breaker.outageSince, now - since >= options.outageBudget {
                    return .outage("APNs (\(host)) unreachable for \(Int((now - since).components.seconds)) s: \(breaker.lastError ?? "no connection")")
                }
                logger.warning("APNs unreachable; waiting before a probe", metadata: [
                    "host": "\(host)", "error": "\(breaker.lastError ?? "")",
                ])
                guard await pause(until: breaker.reopenAt ?? now) else { return .stopped }
            case .fenced:
                // Renewals failed (the database is away): wait for one, within the database budget.
                let since = clock.now
                logger.warning("leases could not be renewed; sending waits for the database")
                while !state.leases.maySend(at: clock.now) {
                    if clock.now - since >= options.databaseBudget {
                        return .outage("the database was unavailable for more than \(options.databaseBudget.components.seconds) s: the run's leases could not be renewed")
                    }
                    guard await pause(for: .milliseconds(250)) else { return .stopped }
                }
            }
        }
    }

    /// Sleeps, waking early when the run is asked to stop; false then.
    func pause(for duration: Duration) async -> Bool {
        await pause(until: ContinuousClock().now + duration)
    }

    func pause(until instant: ContinuousClock.Instant) async -> Bool {
        let clock = ContinuousClock()
        while clock.now < instant {
            if options.stop.isRequested { return false }
            let step = min(instant - clock.now, .milliseconds(100))
            do { try await Task.sleep(for: step) } catch { return false }
        }
        return !options.stop.isRequested
    }

    enum Event: Sendable {
        case sent(Sent)
        case tick
        /// The ledger write under way ended (nil: written).
        case recorded((any Error)?)
        /// A claim ended: the deliveries claimed, and the campaign's status
        /// when none was.
        case claimed(Result<ClaimAnswer, any Error>)
    }

    struct ClaimAnswer: Sendable {
        var deliveries: [ClaimedDelivery]
        /// The last row the claim read: the next one reads on from there.
        var end: Int64
        var status: CampaignStatus?
        /// Another run declared this one gone: it must stop.
        var runGone: Bool
    }

    /// One sending session: claim, send, record, in one task group.
    ///
    /// Three things overlap so that neither the database's commits nor
    /// APNs' answers wait for the other: the sends in flight, one ledger
    /// write (the outcomes gathered while the previous write committed) and
    /// one claim of the next batch (started as soon as the current one is
    /// taken). Outcomes not yet written, together with the sends in flight,
    /// never exceed `repeatBound`: a send starts only below it.
    private func session(_ prepared: PreparedCampaign, summary: inout CampaignSummary, state: inout RunState,
                         logger: Logger) async throws -> SessionEnd {
        guard let transport else { return .drained }
        let clock = ContinuousClock()
        let store = self.store
        let db = self.db
        let options = self.options
        let campaign = prepared.campaign
        let runID = state.runID
        let leases = state.leases
        var pending: [DeliveryOutcome] = []
        pending.reserveCapacity(options.recordEvery)
        var lastFlush = clock.now
        var end: SessionEnd?
        var progress = CampaignProgress(campaign: campaign.id,
                                        total: summary.snapshot.flatMap { $0.complete ? $0.queued : nil }, now: clock.now)
        defer { progress.finish() }
        // Claims of this session are sent only while no lease lapsed since it began.
        let epoch = leases.epoch
        // A write starts once this many outcomes wait (or `recordInterval` passed).
        let writeAt = max(1, options.recordEvery / 2)

        try await withThrowingTaskGroup(of: Event.self) { group in
            var inFlight = 0
            var ticking = false
            var sendsCancelled = false
            var fatal: String?
            /// Outcomes in the ledger write under way.
            var writing = 0
            var claiming = false
            /// The answer of the last claim, not used yet.
            var answer: ClaimAnswer?
            /// Where the next claim reads on (the end of the last window read).
            var cursor: Int64 = 0

            func progressed() {
                progress.update(done: summary.sent + summary.invalid + summary.failed + summary.skipped,
                                now: clock.now, logger: logger)
            }
            /// Starts writing what is pending, unless a write is under way.
            /// The write is a task of its own, awaited by a task of the
            /// group: fencing cancels the group's sends, never a ledger write.
            func startWrite() {
                guard writing == 0, !pending.isEmpty else { return }
                let batch = pending
                pending.removeAll(keepingCapacity: true)
                writing = batch.count
                lastFlush = clock.now
                let write = Task { try await db("record outcomes") { try await store.record(batch, run: runID, campaign: campaign.id) } }
                group.addTask {
                    do {
                        _ = try await write.value
                        return .recorded(nil)
                    } catch {
                        return .recorded(error)
                    }
                }
            }
            func startClaim() {
                guard !claiming, answer == nil else { return }
                claiming = true
                let limit = options.batchSize
                let after = cursor
                let claim = Task {
                    let take = { @Sendable (from: Int64) in
                        try await db("claim deliveries") {
                            try await store.claimWindow(campaign: campaign.id, run: runID, limit: limit,
                                                        lease: options.lease, after: from)
                        }
                    }
                    let first = { @Sendable () in
                        try await db("find claimable deliveries") { try await store.firstClaimable(campaign: campaign.id) }
                    }
                    var window = ClaimWindow(deliveries: [], end: after, full: false)
                    func goOn() -> Bool { window.deliveries.isEmpty && window.full && window.runLive }
                    // A session starts at the campaign's first claimable row.
                    if after > 0 {
                        window = try await take(after)
                    } else if let start = try await first() {
                        window = try await take(start - 1)
                    }
                    // Windows of rows sent already (another worker's): read on.
                    while goOn() { window = try await take(window.end) }
                    if window.deliveries.isEmpty, window.runLive, after > 0, let behind = try await first() {
                        // Rows given back behind the cursor (a retry, a stopped run's): read from there.
                        window = try await take(behind - 1)
                        while goOn() { window = try await take(window.end) }
                    }
                    if !window.runLive { return ClaimAnswer(deliveries: [], end: window.end, status: nil, runGone: true) }
                    // Nothing claimable: a marketer's pause or cancel, or the end.
                    let status = window.deliveries.isEmpty
                        ? try await db("read the campaign's status") { try await store.campaignStatus(campaign.id) } : nil
                    return ClaimAnswer(deliveries: window.deliveries, end: window.end, status: status, runGone: false)
                }
                group.addTask {
                    do {
                        return .claimed(.success(try await claim.value))
                    } catch {
                        return .claimed(.failure(error))
                    }
                }
            }
            func collect(_ outcome: DeliveryOutcome) {
                pending.append(outcome)
                summary.count(outcome, into: &state.figures)
            }
            /// Waits for one event (an answer, a write or claim ending, or
            /// `recordInterval`); starts the ledger write when one is due.
            func waitOne() async throws {
                if !ticking, !sendsCancelled {
                    ticking = true
                    let interval = options.recordInterval
                    group.addTask {
                        try? await Task.sleep(for: interval)
                        return .tick
                    }
                }
                if let event = try await group.next() {
                    switch event {
                    case .tick:
                        ticking = false
                    case .sent(let done):
                        inFlight -= 1
                        state.breakers[done.host].record(transportFailure: done.transportFailure, error: done.outcome.error,
                                                         at: clock.now)
                        if fatal == nil { fatal = done.fatal }
                        collect(done.outcome)
                    case .recorded(let error):
                        writing = 0
                        if let error { throw error }
                        progressed()
                    case .claimed(let result):
                        claiming = false
                        let claimed = try result.get()
                        cursor = claimed.end
                        answer = claimed
                    }
                }
                writeIfDue()
            }
            func writeIfDue() {
                if pending.count >= writeAt || clock.now - lastFlush >= options.recordInterval { startWrite() }
            }

            var claimed: [ClaimedDelivery] = []
            var next = 0
            var giveBackDelay = 0.0
            sending: while true {
                if let fatal { end = .fatal(fatal); break }
                if options.stop.isRequested { end = .stopped; break }
                let lease = leases.check(at: clock.now)
                if !lease.maySend || lease.epoch != epoch { end = .fenced; break }
                if inFlight >= options.concurrency || inFlight + pending.count + writing >= options.repeatBound {
                    try await waitOne()
                    continue
                }
                if next == claimed.count {
                    guard let ready = answer else {
                        startClaim()
                        try await waitOne()
                        continue
                    }
                    answer = nil
                    if ready.runGone { end = .declaredGone; break }
                    if ready.deliveries.isEmpty {
                        switch ready.status {
                        case .paused?: end = .paused
                        case .cancelled?: end = .cancelled
                        default: end = .drained
                        }
                        break
                    }
                    claimed = ready.deliveries
                    next = 0
                    if let expiry = campaign.expiresAt, expiry <= Date() { end = .expired; break }
                    continue
                }
                // The next batch is claimed while this one is sent: a claim
                // of 1,000 rows took 45 ms (pg_stat_statements, 1,000,000-device
                // run), about as long as sending them takes at 20k/s, so
                // one started halfway through left the sends waiting.
                if answer == nil { startClaim() }

                let delivery = claimed[next]
                let host = delivery.target.environment == "sandbox" ? APNsEnvironment.sandbox.host : APNsEnvironment.production.host
                let notification: APNsNotification
                switch personalizer.extras(for: prepared, target: delivery.target) {
                case .failure(let problem):
                    next += 1
                    collect(DeliveryOutcome(deliveryID: delivery.target.deliveryID, deviceID: delivery.deviceID,
                                            status: .skipped, error: problem.message, attempts: 0))
                    writeIfDue()
                    continue
                case .success(let extras):
                    let payload = prepared.builder.payload(for: delivery.target, replyToken: extras.replyToken,
                                                           sealed: extras.sealed)
                    let headers = prepared.builder.headers(for: delivery.target, topic: options.topic)
                    notification = APNsNotification(
                        deviceToken: delivery.target.deviceToken,
                        environment: delivery.target.environment == "sandbox" ? .sandbox : .production,
                        pushType: headers.pushType, priority: headers.priority, expiration: headers.expiration,
                        collapseID: headers.collapseID, apnsID: headers.apnsID, topic: headers.topic,
                        payload: payload)
                }
                switch state.breakers[host].gate(at: clock.now, probeInFlight: false) {
                case .closed, .probe:
                    break
                case .waitForProbe:
                    if inFlight == 0 {
                        state.breakers[host].probing = false
                    } else {
                        try await waitOne()
                    }
                    continue
                case .open(let until):
                    end = .breakerOpen(host)
                    giveBackDelay = max(0, Double((until - clock.now).components.seconds))
                    break sending
                }
                next += 1
                group.addTask {
                    let result = await transport.send(notification)
                    return .sent(Self.sent(result, delivery: delivery, host: host))
                }
                inFlight += 1
            }

            if case .stopped? = end, let asked = options.stop.requestedAt {
                // In flight: let them finish within the grace period, then end them.
                while inFlight > 0, clock.now < asked + options.stopGrace { try await waitOne() }
                if inFlight > 0 {
                    logger.warning("grace period over; ending what is still in flight", metadata: ["in_flight": "\(inFlight)"])
                    await transport.shutdown()
                }
            }
            if case .fenced? = end, leases.epoch != epoch {
                // A lease lapsed (the process was frozen, the database away):
                // what is in flight may belong to another run now. No retry
                // of it may go out; written requests are waited for.
                sendsCancelled = true
                group.cancelAll()
            }
            while inFlight > 0 || writing > 0 || claiming { try await waitOne() }
            // Claims not sent go back to the queue as they were.
            for delivery in claimed[next...] + (answer?.deliveries ?? []) {
                pending.append(DeliveryOutcome(deliveryID: delivery.target.deliveryID, deviceID: delivery.deviceID,
                                               status: .queued, attempts: 0, delay: giveBackDelay))
                state.figures.requeued += 1
                summary.requeued += 1
            }
            group.cancelAll()
            if !pending.isEmpty {
                let batch = pending
                pending.removeAll()
                _ = try await db("record outcomes") { try await store.record(batch, run: runID, campaign: campaign.id) }
                progressed()
            }
        }
        return end ?? .drained
    }

    /// One finished send: its ledger outcome, whether it was a transport
    /// failure (for the host's circuit breaker) and, when APNs refused the
    /// provider itself, why the run must stop.
    struct Sent: Sendable {
        var outcome: DeliveryOutcome
        var host: String
        var transportFailure = false
        var fatal: String?
    }

    /// Apple's per-notification refusals are final (`failed`, `invalid`);
    /// everything transient (429, 500, 503, timeouts, lost or refused
    /// connections, TLS failures) goes back to the queue with a backoff; a
    /// refusal of the provider itself stops the run and leaves the delivery queued.
    static func sent(_ result: APNsResult, delivery: ClaimedDelivery, host: String) -> Sent {
        sent(result, deliveryID: delivery.target.deliveryID, deviceID: delivery.deviceID, host: host)
    }

    /// The same for any ledger row (campaign deliveries and config refresh pushes).
    static func sent(_ result: APNsResult, deliveryID id: Int64, deviceID device: Int64, host: String) -> Sent {
        switch result.outcome {
        case .sent:
            return Sent(outcome: DeliveryOutcome(deliveryID: id, deviceID: device, status: .sent, attempts: result.attempts),
                        host: host)
        case .deviceInvalid(let reason, let timestamp):
            return Sent(outcome: DeliveryOutcome(deliveryID: id, deviceID: device, status: .invalid, error: reason.rawValue,
                                                 attempts: result.attempts, invalidSince: timestamp), host: host)
        case .failed(let status, let reason):
            let text = status.map { "\($0) \(reason.rawValue)" } ?? reason.rawValue
            if reason.isFatalForRun {
                return Sent(outcome: DeliveryOutcome(deliveryID: id, deviceID: device, status: .queued, error: text,
                                                     attempts: result.attempts), host: host, fatal: text)
            }
            if reason == .clientShutdown {
                // Ended by our own stop: its fate is unknown, so it is sent again later.
                return Sent(outcome: DeliveryOutcome(deliveryID: id, deviceID: device, status: .queued,
                                                     error: "stopped before APNs answered", attempts: result.attempts),
                            host: host)
            }
            if isTransient(status: status, reason: reason) {
                let transport = status == nil
                return Sent(outcome: DeliveryOutcome(deliveryID: id, deviceID: device, status: .retry, error: text,
                                                     attempts: result.attempts, delay: status == 429 ? 2 : 1),
                            host: host, transportFailure: transport)
            }
            return Sent(outcome: DeliveryOutcome(deliveryID: id, deviceID: device, status: .failed, error: text,
                                                 attempts: result.attempts), host: host)
        }
    }

    /// Answers that say "not now" rather than "never".
    static func isTransient(status: Int?, reason: APNsReason) -> Bool {
        if let status, [429, 500, 502, 503, 504].contains(status) { return true }
        switch reason {
        case .connectionFailed, .timeout, .idleTimeout, .tooManyRequests, .internalServerError, .serviceUnavailable,
             .shutdown, .expiredProviderToken, .tooManyProviderTokenUpdates:
            return true
        default:
            return false
        }
    }
}

extension CampaignSummary {
    mutating func count(_ outcome: DeliveryOutcome, into figures: inout RunFigures) {
        figures.retried += max(0, outcome.attempts - 1)
        switch outcome.status {
        case .sent: sent += 1; figures.sent += 1
        case .invalid: invalid += 1; figures.invalid += 1
        case .failed: failed += 1; figures.failed += 1
        case .skipped: skipped += 1; figures.skipped += 1
        case .queued, .retry: requeued += 1; figures.requeued += 1
        }
    }
}
