import ExtensionKit
import Foundation
import HeraldCore
import Lifecycle
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import Store
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A batch run: due campaigns → audience snapshot → payloads → APNs (or,
/// in a dry run, JSON lines) → ledger. See docs/DESIGN.md, "How a run behaves".
public struct CampaignRun: Sendable {

    public let stores: RunStores
    public let options: RunOptions
    public let personalizer: any DeliveryPersonalizer
    public let transport: (any PushTransport)?
    /// APNs' broadcast channels, for sales that use them (nil: a dry run).
    public let channels: (any ChannelTransport)?
    public let sink: (any PayloadSink)?
    public let logger: Logger
    /// The kinds of push this run knows (`PlanChoice`).
    var plans = PlanChoice.standard

    /// A run that sends through `transport`.
    public init(stores: RunStores, options: RunOptions, personalizer: any DeliveryPersonalizer,
                transport: any PushTransport, channels: (any ChannelTransport)? = nil, logger: Logger) {
        self.stores = stores
        self.options = options
        self.personalizer = personalizer
        self.transport = transport
        self.channels = channels
        self.sink = nil
        self.logger = logger
    }

    /// A dry run that writes each payload to `sink`.
    public init(stores: RunStores, options: RunOptions, personalizer: any DeliveryPersonalizer,
                sink: any PayloadSink, logger: Logger) {
        var options = options
        options.dryRun = true
        self.stores = stores
        self.options = options
        self.personalizer = personalizer
        self.transport = nil
        self.channels = nil
        self.sink = sink
        self.logger = logger
    }

    /// Database calls through transient faults, within the run's budget.
    var db: DatabaseRetry {
        DatabaseRetry(options, logger: logger)
    }

    public func execute() async throws -> RunSummary {
        let clock = options.clock
        let started = clock.now
        let (runs, campaigns) = (stores.runs, stores.campaigns)
        let options = self.options
        let pid = ProcessInfo.processInfo.processIdentifier
        let runID = try await db("begin the run") {
            try await runs.beginRun(host: options.host, pid: pid, dryRun: options.dryRun, lease: options.lease)
        }
        var logger = self.logger
        logger[metadataKey: "run"] = "\(runID)"
        let leases = LeaseClock(lease: options.lease, sendSpan: options.sendSpan, renewedAt: started)
        let budget = RunBudget(total: SendLimits(options))
        var state = RunState(runID: runID, leases: leases, breakers: RunBreakers(threshold: options.breakerThreshold),
                             budget: budget, writer: OutcomeWriter(ledger: stores.ledger, db: db, run: runID, budget: budget))
        var summaries: [CampaignSummary] = []
        var expired = 0
        var recovered = 0
        var refresh = ConfigRefreshSummary()
        var series = SeriesSummary()
        var journeys = JourneyBatch()
        // Not a child of the group below: a call on a connection that never
        // answers must not keep the run from ending; cancelled when it does.
        let session = options.dryRun ? nil : Task { [logger] in await Self.holdSession(runs: runs, run: runID, clock: options.clock, logger: logger) }
        defer { session?.cancel() }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                if !options.dryRun {
                    let logger = logger
                    group.addTask { await Self.renewLeases(runs: runs, run: runID, options: options, leases: leases, logger: logger) }
                }
                defer { group.cancelAll() }
                if !options.dryRun {
                    let gone = try await db("find runs that are gone") { try await runs.goneRuns(besides: runID) }
                    recovered = try await db("recover abandoned deliveries") {
                        try await runs.recoverAbandoned(currentRun: runID, deadRuns: gone, lease: options.lease)
                    }
                    expired = try await db("expire campaigns") { try await campaigns.expireCampaigns() }
                    state.figures.expired += expired
                    try await context(state, logger: logger).deleteEndedChannels()
                    let seriesStore = stores.series
                    series = try await db("advance recurring and on-entry campaigns") { try await seriesStore.advance() }
                    if !series.made.isEmpty {
                        logger.notice("occurrences made", metadata: ["campaigns": "\(series.made.map(String.init).joined(separator: ","))"])
                    }
                    if recovered > 0 { logger.notice("requeued deliveries of stopped runs", metadata: ["deliveries": "\(recovered)"]) }
                    journeys = try await JourneyMoves(stores: stores, options: options, db: db, runID: runID, logger: logger).run()
                }
                if !options.dryRun, let transport {
                    refresh = try await ConfigRefresh(stores: stores, transport: transport, options: options, db: db,
                                                      logger: logger).run(state: &state)
                }
                let due = try await db("find due campaigns", { try await campaigns.dueCampaigns() })
                summaries = try await runCampaigns(DueOrder.sorted(due), state: &state, logger: logger)
                // The widget pushes of the campaigns that started, once their audiences are written.
                if !state.widgetPushes.isEmpty, state.interruption == nil {
                    let pushes = state.widgetPushes
                    state.widgetPushes = []
                    summaries += try await runCampaigns(pushes, state: &state, logger: logger)
                }
            }
        } catch let outage as DatabaseUnavailable {
            logger.error("run stopped: database unavailable", metadata: ["error": "\(outage)"])
            state.interruption = .outage(outage.description)
        } catch {
            state.figures.campaigns = summaries.count
            let figures = state.figures
            _ = try? await db("finish the run") {
                try await runs.finishRun(runID, figures: figures, end: .failed, error: ErrorText.describe(error))
            }
            throw error
        }
        state.figures.campaigns = summaries.count
        let figures = state.figures
        let refused = state.breakers.snapshot.refusedApps.mapValues { options.apps.describe($0) }
        let end: RunStore.RunEnd = state.interruption != nil ? .stopped : refused.isEmpty ? .succeeded : .failed
        let note: String? = switch state.interruption {
        case nil: refused.isEmpty ? nil : "credentials refused: " + refused.sorted { $0.key < $1.key }.map(\.value).joined(separator: "; ")
        case .stopped?: "stopped by a signal; the next run continues"
        case .outage(let why)?: why + "; the next run continues"
        }
        if !options.dryRun {
            do {
                let back = try await db("finish the run") {
                    try await runs.finishRun(runID, figures: figures, end: end, error: note)
                }
                state.figures.requeued += back
            } catch {
                logger.error("could not record the run's end", metadata: ["error": "\(ErrorText.describe(error))"])
                if state.interruption == nil { state.interruption = .outage(ErrorText.describe(error)) }
            }
        } else {
            _ = try? await db("finish the run") { try await runs.finishRun(runID, figures: figures, end: end, error: note) }
        }
        for (app, text) in refused.sorted(by: { $0.key < $1.key }) {
            logger.error("APNs refused an app's credential", metadata: ["app": "\(app)", "reason": "\(text)"])
        }
        var summary = RunSummary(runID: runID, dryRun: options.dryRun, figures: state.figures, campaigns: summaries,
                                 duration: clock.now - started, expired: expired, recovered: recovered,
                                 configRefresh: refresh, series: series, interruption: state.interruption, refusedApps: refused)
        summary.journeys = journeys
        return summary
    }

    /// Renews the run's leases every `renewEvery` until cancelled; each
    /// renewal that succeeds moves the lease deadline.
    static func renewLeases(runs: RunStore, run: Int64, options: RunOptions, leases: LeaseClock, logger: Logger) async {
        let clock = options.clock
        while !Task.isCancelled {
            do { try await clock.sleep(for: options.renewEvery) } catch { return }
            let asked = clock.now
            do {
                _ = try await DatabaseRetry.withDeadline(options.renewEvery, what: "renew leases", clock: clock) {
                    try await runs.renewLeases(run: run, lease: options.lease)
                }
                leases.renewed(asked: asked, seen: clock.now)
            } catch {
                if Task.isCancelled { return }
                logger.warning("could not renew the run's leases", metadata: ["error": "\(ErrorText.describe(error))"])
            }
        }
    }

    /// Holds the run's lock on a database session of its own for as long as
    /// the run lasts, confirming it every 2 s and taking it again on a new
    /// connection after a restart or failover (`herald_hold_run`): other runs read
    /// the run as gone once that session is, whatever host or PID namespace
    /// the two processes are in.
    static func holdSession(runs: RunStore, run: Int64, clock: any HeraldClock, logger: Logger) async {
        while !Task.isCancelled {
            do {
                try await runs.client.withConnection { connection in
                    do {
                        while !Task.isCancelled {
                            let held = try await DatabaseRetry.withDeadline(.seconds(5), what: "hold the run's session", clock: clock) {
                                try await runs.holdRun(run, on: connection)
                            }
                            if !held { logger.warning("another session holds this run's lock") }
                            try await clock.sleep(for: .seconds(2))
                        }
                    } catch is CancellationError {}
                    // The connection goes back to the pool: without its lock.
                    try? await runs.releaseRun(run, on: connection)
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("could not hold the run's session", metadata: ["error": "\(ErrorText.describe(error))"])
                do { try await clock.sleep(for: .seconds(1)) } catch { return }
            }
        }
    }

    /// Sends the due campaigns in `DueOrder`, up to `campaignsAtOnce` at a
    /// time (one in a dry run, whose payloads are one stream), each from a
    /// state of its own that is merged into the run's as it ends; they share
    /// the run's leases, its limits (`RunBudget`) and the APNs client's
    /// connections. A stop or an outage starts no further campaign.
    private func runCampaigns(_ ids: [Int64], state: inout RunState, logger: Logger) async throws -> [CampaignSummary] {
        let width = options.dryRun ? 1 : max(1, options.campaignsAtOnce)
        var summaries = [CampaignSummary?](repeating: nil, count: ids.count)
        try await withThrowingTaskGroup(of: (Int, CampaignSummary, RunState).self) { group in
            var next = 0
            var running = 0
            while true {
                while running < width, next < ids.count, state.interruption == nil {
                    if options.stop.isRequested {
                        state.interruption = .stopped
                        break
                    }
                    let (index, id, start) = (next, ids[next], state.forCampaign())
                    group.addTask {
                        var own = start
                        let summary = try await self.runCampaign(id, state: &own, logger: logger)
                        return (index, summary, own)
                    }
                    next += 1
                    running += 1
                }
                guard running > 0, let (index, summary, own) = try await group.next() else { break }
                running -= 1
                summaries[index] = summary
                state.merge(own)
            }
        }
        return summaries.compactMap { $0 }.filter { !$0.idleJourneyMessage }
    }

    private func runCampaign(_ id: Int64, state: inout RunState, logger: Logger) async throws -> CampaignSummary {
        var logger = logger
        logger[metadataKey: "campaign"] = "\(id)"
        var summary = CampaignSummary(id: id, name: "")
        let campaigns = stores.campaigns
        let run = context(state, logger: logger)
        do {
            let due = try await db("load campaign") { try await campaigns.loadCampaign(id) }
            summary.name = due.campaign.name
            summary.kind = due.campaign.kind
            summary.journeyMessage = due.campaign.journeyID != nil
            var plan = try plans.plan(for: due)
            let start = try await plan.begin(in: run)
            state.widgetPushes += start.followUps
            guard !start.waits, let snap = try await plan.snapshot(in: run) else { return summary }
            try await plan.afterSnapshot(in: run)
            summary.snapshot = snap
            state.figures.targeted += snap.inserted
            state.figures.skipped += snap.skipped
            if options.dryRun {
                logSnapshot(snap, logger: logger)
                try await printPayloads(plan, summary: &summary)
            } else if snap.complete {
                logSnapshot(snap, logger: logger)
                try await send(plan, summary: &summary, state: &state, logger: logger)
            } else {
                try await sendWhileSnapshotting(plan, in: run, summary: &summary, state: &state, logger: logger)
            }
        } catch let problem as CampaignProblem {
            summary.personNeeded = problem.personNeeded
            try await fail(&summary, reason: problem.message, logger: logger)
        } catch let error as StoreError {
            try await fail(&summary, reason: error.message, logger: logger)
        } catch where DatabaseFault(error).isCampaignsOwn {
            // Only what a campaign's own data causes fails it (a constraint, an
            // unreadable rule or column); a lost connection, a restart, a
            // deadlock or a timeout concerns the run, and was retried.
            try await fail(&summary, reason: ErrorText.describe(error), logger: logger)
        }
        return summary
    }

    /// What a campaign's plan reads and calls of this run.
    func context(_ state: RunState, logger: Logger) -> PlanContext {
        PlanContext(stores: stores, options: options, db: db, channels: options.dryRun ? nil : channels,
                    runID: state.runID, leases: state.leases, breakers: state.breakers, budget: state.budget, logger: logger)
    }

    private func logSnapshot(_ snap: SnapshotResult, logger: Logger) {
        guard snap.inserted > 0 else { return }
        logger.info("audience snapshot", metadata: [
            "devices": "\(snap.inserted)", "queued": "\(snap.queued)",
            "skipped": "\(snap.skipped)", "deferred": "\(snap.deferred)",
        ])
    }

    /// Sends a campaign whose audience is still being written: the next
    /// slices are written by a child task while the ones written are sent.
    /// Sending waits for slices rather than ending while some remain; when
    /// sending ends early (a stop, a pause, an outage), no further slice is
    /// started and the one under way is waited for. An error of a slice
    /// (its own data, or the database away beyond the budget) is thrown
    /// once sending has ended.
    private func sendWhileSnapshotting(_ plan: any CampaignPlan, in run: PlanContext, summary: inout CampaignSummary,
                                       state: inout RunState, logger: Logger) async throws {
        let options = self.options
        // A paced campaign's audience is written as before, in its first
        // minutes: paced over hours, its slices would pick their devices hours apart.
        let lead = plan.prepared.campaign.pace == nil ? options.snapshotLead : .max
        let writing = SnapshotWriting(written: summary.snapshot?.inserted ?? 0, lead: lead)
        try await withThrowingTaskGroup(of: SnapshotResult.self) { group in
            group.addTask {
                defer { writing.finish() }
                var rest = SnapshotResult(complete: false)
                while !rest.complete, !writing.stopRequested, !options.stop.isRequested {
                    if !writing.mayWriteNext {
                        try? await options.clock.sleep(for: .milliseconds(20))
                        continue
                    }
                    // Only a plan whose snapshot is written in slices comes here.
                    guard let slice = try await plan.snapshot(in: run) else { break }
                    rest.add(slice)
                    writing.wrote(slice.inserted)
                }
                return rest
            }
            do {
                try await send(plan, summary: &summary, state: &state, logger: logger, snapshotting: writing)
            } catch {
                writing.requestStop()
                throw error
            }
            writing.requestStop()
            for try await rest in group {
                summary.snapshot?.add(rest)
                state.figures.targeted += rest.inserted
                state.figures.skipped += rest.skipped
            }
        }
        if let snap = summary.snapshot { logSnapshot(snap, logger: logger) }
    }

    func fail(_ summary: inout CampaignSummary, reason: String, logger: Logger) async throws {
        summary.failure = reason
        logger.error("campaign failed", metadata: ["reason": "\(reason)"])
        let campaigns = stores.campaigns
        let id = summary.id
        try await db("fail the campaign") { try await campaigns.failCampaign(id, reason: reason) }
    }
}
