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
/// and recorded like campaign deliveries (`RefreshClaims`).
struct ConfigRefresh: Sendable {
    let ledger: DeliveryLedger
    let refreshes: ConfigRefreshStore
    let config: ConfigStore
    let transport: any PushTransport
    let options: RunOptions
    let db: DatabaseRetry
    let logger: Logger

    init(stores: RunStores, transport: any PushTransport, options: RunOptions, db: DatabaseRetry, logger: Logger) {
        self.ledger = stores.ledger
        self.refreshes = ConfigRefreshStore(client: stores.client, logger: logger)
        self.config = ConfigStore(client: stores.client, logger: logger)
        self.transport = transport
        self.options = options
        self.db = db
        self.logger = logger
    }

    /// Plans the pushes of campaigns within the lead time, then sends every
    /// queued one (this run's and any left by earlier runs) through the
    /// sending engine: the same breaker, lease fencing, retries, stop grace
    /// and exit status as campaign deliveries. An outage or a stop is
    /// recorded in `state.interruption`.
    func run(state: inout RunState) async throws -> ConfigRefreshSummary {
        var summary = ConfigRefreshSummary()
        try await plan(&summary)
        let source = RefreshClaims(ledger: ledger, refreshes: refreshes, db: db, runID: state.runID, options: options)
        let engine = SendingEngine(transport: transport, options: options, leases: state.leases, logger: logger)
        var tally = SendTally()
        let finish = try await engine.send(source, breakers: state.breakers, tally: &tally)
        summary.sent += tally.sent
        summary.invalid += tally.invalid
        summary.failed += tally.failed
        summary.skipped += tally.skipped
        summary.requeued += tally.requeued
        summary.retried += tally.retried
        switch finish {
        case .done, .paused, .cancelled, .expired:
            break
        case .stopped:
            state.interruption = .stopped
        case .outage(let why):
            logger.error("config refresh pushes stopped by an outage", metadata: ["reason": "\(why)"])
            state.interruption = .outage(why)
        }
        return summary
    }

    private func plan(_ summary: inout ConfigRefreshSummary) async throws {
        let (refreshes, config) = (refreshes, config)
        let lead = options.configRefreshLead
        let upcoming = try await db("find upcoming campaigns") { try await refreshes.upcoming(lead: lead) }
        guard !upcoming.isEmpty else { return }
        let catalogue = try await db("read the notification catalogue") { try await config.catalogue() }
        var documents: [AppLocale: NotificationCatalogue.Document] = [:]
        for campaign in upcoming {
            guard catalogue.categories[campaign.categoryID] != nil else { continue }
            let pairs: [AppLocale]
            do {
                pairs = try await db("read the audience's apps and locales") {
                    try await refreshes.audienceLocales(segmentRule: campaign.segmentRule, apps: campaign.apps)
                }
            } catch let error as SegmentRuleError {
                // The campaign itself fails with this reason when it is due.
                logger.warning("config refresh: segment not usable", metadata: ["campaign": "\(campaign.campaignID)", "reason": "\(error)"])
                continue
            }
            var current: [AppLocale: (etag: String, categoryHash: String)] = [:]
            var fresh: [(locale: String, document: NotificationCatalogue.Document)] = []
            for pair in pairs {
                if documents[pair] == nil {
                    let d = catalogue.document(for: pair.locale, app: pair.app)
                    documents[pair] = d
                    fresh.append((pair.locale, d))
                }
                // A document without the category (an app it does not belong to) announces nothing.
                if let d = documents[pair], let hash = d.categoryHashes[campaign.categoryID] {
                    current[pair] = (d.etag, hash)
                }
            }
            // The ETags a refresh announces are known before any device reports them.
            let announced = fresh
            try await db("record the config documents") { try await config.record(announced) }
            let planned = current
            let queued = try await db("plan config refresh pushes") {
                try await refreshes.plan(campaign: campaign.campaignID, category: campaign.categoryID,
                                         current: planned, segmentRule: campaign.segmentRule)
            }
            summary.campaigns += 1
            summary.queued += queued
            if queued > 0 {
                logger.info("config refresh queued", metadata: [
                    "campaign": "\(campaign.campaignID)", "category": "\(campaign.categoryID)", "devices": "\(queued)",
                ])
            }
        }
    }
}
