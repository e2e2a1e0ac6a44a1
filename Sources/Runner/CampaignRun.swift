import ExtensionKit
import Foundation
import HeraldCore
import Logging
import PostgresNIO
import Store

/// How a batch run behaves.
public struct RunOptions: Sendable {
    /// The app's bundle id (`apns-topic`).
    public var topic: String
    /// Build and print the payloads instead of sending them.
    public var dryRun: Bool
    /// Deliveries claimed from the ledger at a time.
    public var batchSize: Int
    /// Notifications in flight at once.
    public var concurrency: Int
    /// Outcomes written to the ledger in one statement.
    public var recordBatch: Int
    public var host: String
    /// How long before a campaign's `send_at` its audience gets the config refresh push (contract 7).
    public var configRefreshLead: TimeInterval = 3600

    public init(topic: String, dryRun: Bool = false, batchSize: Int = 1000, concurrency: Int = 200,
                recordBatch: Int = 500, host: String = ProcessInfo.processInfo.hostName) {
        self.topic = topic
        self.dryRun = dryRun
        self.batchSize = batchSize
        self.concurrency = concurrency
        self.recordBatch = recordBatch
        self.host = host
    }
}

/// Where a dry run writes its JSON lines.
public protocol PayloadSink: Sendable {
    func write(_ line: [UInt8]) async throws
}

/// Per-device parts of a payload: the reply token and the sealed envelope.
public protocol DeliveryPersonalizer: Sendable {
    /// The reply token and envelope of one delivery, or why it cannot be sent.
    func extras(for prepared: PreparedCampaign, target: DeliveryTarget) -> Result<(replyToken: String?, sealed: SealedEnvelope?), CampaignProblem>
}

/// What one campaign did in this run.
public struct CampaignSummary: Sendable, Hashable {
    public var id: Int64
    public var name: String
    public var kind: CampaignKind?
    public var snapshot: SnapshotResult?
    public var sent = 0
    public var invalid = 0
    public var failed = 0
    public var skipped = 0
    public var printed = 0
    public var completed = false
    public var failure: String?
}

public struct RunSummary: Sendable {
    public var runID: Int64
    public var dryRun: Bool
    public var figures: RunFigures
    public var campaigns: [CampaignSummary]
    public var duration: Duration
    public var expired: Int
    public var recovered: Int
    public var configRefresh = ConfigRefreshSummary()

    public var rate: Double {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return seconds > 0 ? Double(figures.sent) / seconds : 0
    }
}

/// A batch run: due campaigns → audience snapshot → payloads → APNs (or,
/// in a dry run, JSON lines) → ledger. See docs/DESIGN.md, "How a run behaves".
public struct CampaignRun: Sendable {
    /// `$1`…`$4` of the snapshot statement are the campaign's own; the segment's binds follow.
    static let segmentFirstPlaceholder = 5

    public let store: CampaignStore
    public let options: RunOptions
    public let personalizer: any DeliveryPersonalizer
    public let transport: (any PushTransport)?
    public let sink: (any PayloadSink)?
    public let logger: Logger

    /// A run that sends through `transport`.
    public init(store: CampaignStore, options: RunOptions, personalizer: any DeliveryPersonalizer,
                transport: any PushTransport, logger: Logger) {
        self.store = store
        self.options = options
        self.personalizer = personalizer
        self.transport = transport
        self.sink = nil
        self.logger = logger
    }

    /// A dry run that writes each payload to `sink`.
    public init(store: CampaignStore, options: RunOptions, personalizer: any DeliveryPersonalizer,
                sink: any PayloadSink, logger: Logger) {
        var options = options
        options.dryRun = true
        self.store = store
        self.options = options
        self.personalizer = personalizer
        self.transport = nil
        self.sink = sink
        self.logger = logger
    }

    public func execute() async throws -> RunSummary {
        let clock = ContinuousClock()
        let started = clock.now
        let runID = try await store.beginRun(host: options.host, pid: ProcessInfo.processInfo.processIdentifier,
                                             dryRun: options.dryRun)
        var logger = self.logger
        logger[metadataKey: "run"] = "\(runID)"
        var figures = RunFigures()
        var summaries: [CampaignSummary] = []
        var expired = 0
        var recovered = 0
        var refresh = ConfigRefreshSummary()
        do {
            let body = { (figures: inout RunFigures, summaries: inout [CampaignSummary]) async throws in
                if !options.dryRun {
                    recovered = try await store.recoverAbandoned(currentRun: runID)
                    expired = try await store.expireCampaigns()
                    figures.expired += expired
                    if recovered > 0 { logger.notice("requeued deliveries of stopped runs", metadata: ["deliveries": "\(recovered)"]) }
                }
                if !options.dryRun, let transport {
                    refresh = try await ConfigRefresh(store: store, transport: transport, options: options, logger: logger).run(runID: runID)
                }
                for id in try await store.dueCampaignIDs() {
                    try Task.checkCancellation()
                    summaries.append(try await runCampaign(id, runID: runID, figures: &figures, logger: logger))
                }
            }
            if options.dryRun {
                try await body(&figures, &summaries)
            } else {
                try await store.whileAlive(run: runID) { try await body(&figures, &summaries) }
            }
            figures.campaigns = summaries.count
            try await store.finishRun(runID, figures: figures, error: nil)
        } catch {
            figures.campaigns = summaries.count
            try? await store.finishRun(runID, figures: figures, error: StoreError.describe(error))
            throw error
        }
        return RunSummary(runID: runID, dryRun: options.dryRun, figures: figures, campaigns: summaries,
                          duration: clock.now - started, expired: expired, recovered: recovered, configRefresh: refresh)
    }

    private func runCampaign(_ id: Int64, runID: Int64, figures: inout RunFigures, logger: Logger) async throws -> CampaignSummary {
        var logger = logger
        logger[metadataKey: "campaign"] = "\(id)"
        var summary = CampaignSummary(id: id, name: "")
        do {
            let due = try await store.loadCampaign(id)
            summary.name = due.campaign.name
            summary.kind = due.campaign.kind
            let prepared = try PreparedCampaign(
                campaign: due.campaign, segmentName: due.segmentName, segmentRule: due.segmentRule,
                firstPlaceholder: Self.segmentFirstPlaceholder)
            let snap = try await store.snapshot(due, segment: prepared.segment, start: !options.dryRun)
            summary.snapshot = snap
            figures.targeted += snap.inserted
            figures.skipped += snap.skipped
            if snap.inserted > 0 {
                logger.info("audience snapshot", metadata: [
                    "devices": "\(snap.inserted)", "queued": "\(snap.queued)",
                    "skipped": "\(snap.skipped)", "deferred": "\(snap.deferred)",
                ])
            }
            if options.dryRun {
                try await printPayloads(prepared, summary: &summary, figures: &figures)
            } else {
                try await send(prepared, runID: runID, summary: &summary, figures: &figures, logger: logger)
            }
        } catch let problem as CampaignProblem {
            try await fail(&summary, reason: problem.message, logger: logger)
        } catch let error as StoreError {
            try await fail(&summary, reason: error.message, logger: logger)
        } catch where Self.isCampaignData(error) {
            try await fail(&summary, reason: StoreError.describe(error), logger: logger)
        }
        return summary
    }

    /// A statement the server refused because of this campaign's data, or a
    /// column that could not be read, concerns this campaign only; a lost
    /// connection concerns the whole run.
    static func isCampaignData(_ error: any Error) -> Bool {
        StoreError.sqlState(of: error) != nil || error is PostgresDecodingError || error is DecodingError
    }

    private func fail(_ summary: inout CampaignSummary, reason: String, logger: Logger) async throws {
        summary.failure = reason
        logger.error("campaign failed", metadata: ["reason": "\(reason)"])
        try await store.failCampaign(summary.id, reason: reason)
    }

    private func printPayloads(_ prepared: PreparedCampaign, summary: inout CampaignSummary, figures: inout RunFigures) async throws {
        guard let sink else { return }
        var after: Int64 = 0
        while true {
            let batch = try await store.peekQueued(campaign: prepared.campaign.id, afterID: after, limit: options.batchSize)
            guard let last = batch.last else { break }
            after = last.target.deliveryID
            for delivery in batch {
                switch personalizer.extras(for: prepared, target: delivery.target) {
                case .failure(let problem):
                    summary.skipped += 1
                    try await sink.write(DryRunLine.skipped(prepared, delivery.target, reason: problem.message))
                case .success(let extras):
                    let payload = prepared.builder.payload(for: delivery.target, replyToken: extras.replyToken, sealed: extras.sealed)
                    let headers = prepared.builder.headers(for: delivery.target, topic: options.topic)
                    try await sink.write(DryRunLine.payload(prepared, delivery.target, headers: headers, payload: payload))
                    summary.printed += 1
                }
            }
        }
    }
}

/// The JSON lines of a dry run: one per device, with the headers and the
/// exact payload bytes APNs would receive.
enum DryRunLine {
    static func payload(_ p: PreparedCampaign, _ t: DeliveryTarget, headers: PushHeaders, payload: [UInt8]) -> [UInt8] {
        var w = head(p, t)
        w.raw(",\"headers\":{")
        for (i, field) in headers.fields.enumerated() {
            if i > 0 { w.raw(",") }
            w.key(field.name)
            w.string(field.value)
        }
        w.raw("},\"bytes\":")
        w.int(Int64(payload.count))
        w.raw(",\"payload\":")
        w.raw(payload)
        w.raw("}\n")
        return w.bytes
    }

    static func skipped(_ p: PreparedCampaign, _ t: DeliveryTarget, reason: String) -> [UInt8] {
        var w = head(p, t)
        w.raw(",\"skipped\":")
        w.string(reason)
        w.raw("}\n")
        return w.bytes
    }

    private static func head(_ p: PreparedCampaign, _ t: DeliveryTarget) -> JSONWriter {
        var w = JSONWriter(capacity: 1024)
        w.raw("{\"campaign\":")
        w.int(p.campaign.id)
        w.raw(",\"delivery\":")
        w.int(t.deliveryID)
        w.raw(",\"kind\":")
        w.string(p.campaign.kind.rawValue)
        w.raw(",\"device\":")
        w.string(t.deviceToken)
        w.raw(",\"environment\":")
        w.string(t.environment)
        return w
    }
}
