import APNs
import ExtensionKit
import Foundation
import HeraldCore
import Lifecycle
import Logging
import PostgresNIO
import Settings
import Store

/// `herald run`: wires the configuration to a `CampaignRun`.
public struct HeraldJob: Sendable {
    public let configuration: HeraldConfiguration
    public let logger: Logger

    public init(configuration: HeraldConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    func options(dryRun: Bool, stop: StopSignal, apns: APNsConfiguration? = nil) throws -> RunOptions {
        let c = configuration
        var options = RunOptions(topic: c.topic, dryRun: dryRun, batchSize: c.batchSize, concurrency: c.concurrency,
                                 recordEvery: c.recordEvery, recordInterval: c.recordInterval, lease: c.lease,
                                 outageBudget: c.outageBudget, databaseBudget: c.databaseBudget,
                                 stopGrace: c.stopGrace, retryWait: c.retryWait, stop: stop)
        options.configRefreshLead = TimeInterval(c.configRefreshLeadMinutes * 60)
        options.firstSnapshotSlice = Int64(c.snapshotSlice)
        options.campaignsAtOnce = c.campaignsAtOnce
        if let apns {
            // The longest one notification can take in the client: every
            // attempt to its deadline, every backoff at its longest, a connect.
            options.sendSpan = (apns.requestTimeout + apns.retry.maxDelay) * apns.retry.maxAttempts + apns.connectTimeout
            // A send starts only when it ends before the leases can expire,
            // with two renewals of room.
            guard options.lease >= options.sendSpan + options.renewEvery * 2 else {
                let need = (options.sendSpan + options.renewEvery * 2).components.seconds + 1
                throw ConfigurationError(
                    "HERALD_LEASE_SECONDS (\(c.lease.components.seconds)) must be at least \(need): longer than one notification can take (APNS_MAX_ATTEMPTS × (APNS_TIMEOUT_SECONDS + backoff) + connect) plus two renewals",
                    key: "HERALD_LEASE_SECONDS")
            }
        }
        return options
    }

    /// A dry run: payloads as JSON lines to `out` (standard output when nil).
    public func dryRun(client: Database, out: String?, stop: StopSignal = StopSignal()) async throws -> RunSummary {
        let sink = try out.map { try LineFile(path: $0) } ?? LineFile.standardOutput()
        var options = try options(dryRun: true, stop: stop)
        // Each device's own app's topic, as a run sends it (printing needs no credential).
        let store = AppStore(client: client, logger: logger)
        options.apps = AppRoutes(apps: try await store.all(), defaultTopic: configuration.topic)
        let run = CampaignRun(stores: RunStores(client: client, logger: logger), options: options, personalizer: try personalizer(),
                              sink: sink, logger: logger)
        let summary = try await run.execute()
        try await sink.finish()
        return summary
    }

    public func run(client: Database, dryRun: Bool, out: String?, stop: StopSignal = StopSignal()) async throws -> RunSummary {
        if dryRun { return try await self.dryRun(client: client, out: out, stop: stop) }
        return try await send(client: client, apns: try configuration.apnsConfiguration(), stop: stop)
    }

    /// A real run: every due campaign through APNs. The APNs client lives
    /// exactly as long as the run.
    public func send(client: Database, apns: APNsConfiguration, stop: StopSignal = StopSignal()) async throws -> RunSummary {
        let personalizer = try personalizer()
        let (options, apns) = try await withApps(client: client, options: try options(dryRun: false, stop: stop, apns: apns),
                                                 apns: apns)
        let apnsClient = try APNsClient(configuration: apns, logger: logger)
        let channels = APNsChannels(configuration: apns, apps: options.apps)
        let run = CampaignRun(stores: RunStores(client: client, logger: logger), options: options,
                              personalizer: personalizer, transport: apnsClient, channels: channels, logger: logger)
        do {
            let summary = try await JobLifecycle.withAPNsClient(apnsClient, stop: stop, logger: logger) { try await run.execute() }
            await channels.shutdown()
            return summary
        } catch {
            await channels.shutdown()
            throw error
        }
    }

    /// Every app's topic and credential in use (`apps`, `app_credentials`), read from the
    /// database now, into the run's options and the client's configuration.
    /// A credential that cannot be read fails its app's campaigns only.
    func withApps(client: Database, options: RunOptions,
                  apns: APNsConfiguration) async throws -> (RunOptions, APNsConfiguration) {
        let store = AppStore(client: client, logger: logger)
        let db = DatabaseRetry(options, logger: logger)
        let apps = try await db("read the apps") { try await store.all() }
        let (credentials, problems) = AppCredentials.loadAll(apps)
        AppCredentials.warn(credentials, problems: problems, logger: logger)
        let deploymentKey = apns.defaultCredential != nil
        // Neither the APNS_* key nor any app's credential: nothing could be sent.
        guard deploymentKey || apps.contains(where: { !$0.current.isEmpty }) else {
            throw ConfigurationError(
                "APNS_KEY_PATH is not set (nor APNS_KEY_ID and APNS_TEAM_ID), and no app has an APNs credential in the database (herald apps add-credential)",
                key: "APNS_KEY_PATH")
        }
        var (options, apns) = (options, apns)
        apns.credentials.merge(credentials) { _, loaded in loaded }
        options.apps = AppRoutes(apps: apps, defaultTopic: configuration.topic, deploymentKey: deploymentKey)
        options.apps.problems = problems
        options.apps.noteCertificates(apns.credentials, defaultCredential: apns.defaultCredential)
        return (options, apns)
    }

    func personalizer() throws -> any DeliveryPersonalizer {
        guard let secret = configuration.replySecret else {
            throw ConfigurationError(
                "HERALD_REPLY_SECRET (or HERALD_REPLY_SECRET_FILE) is not set: every payload carries a reply token; make a secret with `herald keys reply-secret`",
                key: "HERALD_REPLY_SECRET")
        }
        return ReplyLoopPersonalizer(tokens: ReplyTokens(secret: secret))
    }
}
