import APNs
import Foundation
import HeraldCore
import Logging
import Store

/// What the config refresh step of a run did.
public struct ConfigRefreshSummary: Sendable, Hashable {
    /// Campaigns within the lead time whose audience was checked.
    public var campaigns = 0
    /// Refresh pushes queued by this run.
    public var queued = 0
    public var sent = 0
    public var invalid = 0
    public var failed = 0
    public var skipped = 0
    public var retried = 0
    /// Given back to the queue (transient answers, a stop): sent by a later pass or run.
    public var requeued = 0

    public init() {}

    public var line: String? {
        guard campaigns > 0 || sent + invalid + failed + skipped > 0 else { return nil }
        return "  config refresh (background pushes, priority 5) for \(campaigns) upcoming campaigns: queued \(queued), sent \(sent), invalid \(invalid), failed \(failed), skipped \(skipped), requeued \(requeued)"
    }
}

/// Contract 7: before a scheduled campaign uses a category, every device of
/// its audience whose reported config lacks that category's current
/// definition gets a background push naming the current config's ETag, a
/// lead time before `send_at`, once per device and config version. The
/// pushes are ledger rows of kind `config_refresh`, claimed, sent, retried
/// and recorded like campaign deliveries.
struct ConfigRefresh: Sendable {
    static let collapseID = "herald-config"

    let store: CampaignStore
    let refreshes: ConfigRefreshStore
    let config: ConfigStore
    let transport: any PushTransport
    let options: RunOptions
    let logger: Logger

    init(store: CampaignStore, transport: any PushTransport, options: RunOptions, logger: Logger) {
        self.store = store
        self.refreshes = ConfigRefreshStore(client: store.client, logger: logger)
        self.config = ConfigStore(client: store.client, logger: logger)
        self.transport = transport
        self.options = options
        self.logger = logger
    }

    /// The payload of a refresh push: no alert, only `content-available`.
    static func payload(etag: String) -> [UInt8] {
        var w = JSONWriter(capacity: 96)
        w.raw("{\"aps\":{\"content-available\":1},\"herald\":{\"config\":")
        w.string(etag)
        w.raw("}}")
        return w.bytes
    }

    func run(runID: Int64) async throws -> ConfigRefreshSummary {
        var summary = ConfigRefreshSummary()
        let upcoming = try await refreshes.upcoming(lead: options.configRefreshLead)
        if !upcoming.isEmpty {
            let catalogue = try await config.catalogue()
            var documents: [String: NotificationCatalogue.Document] = [:]
            for campaign in upcoming {
                guard catalogue.categories[campaign.categoryID] != nil else { continue }
                let locales: [String]
                do {
                    locales = try await refreshes.audienceLocales(segmentRule: campaign.segmentRule)
                } catch let error as SegmentRuleError {
                    // The campaign itself fails with this reason when it is due.
                    logger.warning("config refresh: segment not usable", metadata: ["campaign": "\(campaign.campaignID)", "reason": "\(error)"])
                    continue
                }
                var current: [String: (etag: String, categoryHash: String)] = [:]
                var fresh: [(locale: String, document: NotificationCatalogue.Document)] = []
                for locale in locales {
                    if documents[locale] == nil {
                        let d = catalogue.document(for: locale)
                        documents[locale] = d
                        fresh.append((locale, d))
                    }
                    if let d = documents[locale], let hash = d.categoryHashes[campaign.categoryID] {
                        current[locale] = (d.etag, hash)
                    }
                }
                // The ETags a refresh announces are known before any device reports them.
                try await config.record(fresh)
                let queued = try await refreshes.plan(campaign: campaign.campaignID, category: campaign.categoryID,
                                                      current: current, segmentRule: campaign.segmentRule)
                summary.campaigns += 1
                summary.queued += queued
                if queued > 0 {
                    logger.info("config refresh queued", metadata: [
                        "campaign": "\(campaign.campaignID)", "category": "\(campaign.categoryID)", "devices": "\(queued)",
                    ])
                }
            }
        }
        try await send(runID: runID, summary: &summary)
        return summary
    }

    /// Claims and sends queued refresh pushes (this run's and any left by
    /// earlier runs) with at most `concurrency` in flight.
    private func send(runID: Int64, summary: inout ConfigRefreshSummary) async throws {
        var fatal: String?
        while fatal == nil {
            try Task.checkCancellation()
            let batch = try await refreshes.claim(run: runID, limit: options.batchSize, lease: options.lease)
            if batch.isEmpty { break }
            var outcomes: [DeliveryOutcome] = []
            outcomes.reserveCapacity(batch.count)
            try await withThrowingTaskGroup(of: CampaignRun.Sent.self) { group in
                var inFlight = 0
                for refresh in batch {
                    if inFlight >= options.concurrency, let done = try await group.next() {
                        inFlight -= 1
                        fatal = fatal ?? done.fatal
                        outcomes.append(done.outcome)
                    }
                    if fatal != nil {
                        outcomes.append(DeliveryOutcome(deliveryID: refresh.deliveryID, deviceID: refresh.deviceID,
                                                        status: .queued, attempts: 0))
                        continue
                    }
                    let notification = APNsNotification(
                        deviceToken: refresh.deviceToken,
                        environment: refresh.environment == "sandbox" ? .sandbox : .production,
                        pushType: "background", priority: 5, expiration: refresh.expiration,
                        collapseID: Self.collapseID, apnsID: refresh.apnsID, topic: options.topic,
                        payload: Self.payload(etag: refresh.etag))
                    let transport = self.transport
                    let ids = (refresh.deliveryID, refresh.deviceID)
                    let host = notification.environment == .sandbox ? "sandbox" : "production"
                    group.addTask {
                        // Transient answers go back to the queue with a backoff, as for campaign deliveries.
                        CampaignRun.sent(await transport.send(notification), deliveryID: ids.0, deviceID: ids.1, host: host)
                    }
                    inFlight += 1
                }
                for try await done in group {
                    fatal = fatal ?? done.fatal
                    outcomes.append(done.outcome)
                }
            }
            for o in outcomes {
                summary.retried += max(0, o.attempts - 1)
                switch o.status {
                case .sent: summary.sent += 1
                case .invalid: summary.invalid += 1
                case .failed: summary.failed += 1
                case .skipped: summary.skipped += 1
                case .queued, .retry: summary.requeued += 1
                }
            }
            try await store.record(outcomes, run: runID, campaign: nil)
        }
        if let fatal {
            throw RunAborted(reason: "APNs refused the provider (\(fatal)); check APNS_KEY_PATH, APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC")
        }
    }
}
