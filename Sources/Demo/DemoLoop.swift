import APNs
import APNsSimulator
import AppServer
import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import Hummingbird
import Logging
import PostgresNIO
import Reporting
import Runner
import ServiceLifecycle
import Settings
import Store

/// The whole loop on one machine: campaigns in PostgreSQL → the batch run →
/// the APNs simulator over HTTP/2 + TLS → the device fleet opens and answers
/// → the reply intake → the analyst views.
public struct DemoLoop: Sendable {
    public let configuration: HeraldConfiguration
    public let workDirectory: URL
    public let logger: Logger

    /// Devices the simulator treats as gone (410 Unregistered) and as another
    /// app's (400 DeviceTokenNotForTopic): sample devices 13, 26 and 39.
    public static let unregisteredDevices = [13, 26]
    public static let otherTopicDevices = [39]
    /// The bundle id of the shop's companion app (Sql/sample_data.sql).
    public static let companionTopic = "com.example.herald.companion"

    public init(configuration: HeraldConfiguration, workDirectory: URL, logger: Logger) {
        self.configuration = configuration
        self.workDirectory = workDirectory
        self.logger = logger
    }

    public struct Outcome: Sendable {
        /// The run half an hour before the campaigns (config refresh pushes),
        /// then the run at their `send_at`.
        public var runs: [RunSummary]
        public var apps: AppFleetReport
        public var fleet: DeviceFleet.Report
        /// Purchases the shop's backend reported (POST /v1/conversions).
        public var purchases = 0
        /// The runs of the Live Activity sale: its start, each update, its end.
        public var saleRuns: [RunSummary] = []
        public var sale = SaleActivitiesReport()
        /// The journey "After the order": each path's count by what the devices did, and as analysts see it.
        public var journey = OrderJourneyReport()
        public var report: String
        public var acceptedLog: String
    }

    /// Runs the loop against `configuration.database` (already migrated and loaded).
    public func execute() async throws -> Outcome {
        let secret = configuration.replySecret ?? ReplySecret.generate()
        let config = {
            var c = configuration
            c.replySecret = secret
            return c
        }()
        let logger = self.logger

        // APNs: a simulator with its own CA, and a provider key it trusts.
        let apnsDirectory = workDirectory.appendingPathComponent("apns-sim")
        try? FileManager.default.removeItem(at: apnsDirectory)
        try FileManager.default.createDirectory(at: apnsDirectory, withIntermediateDirectories: true)
        let acceptedLog = apnsDirectory.appendingPathComponent("accepted.jsonl").path
        let providerKey = P256.Signing.PrivateKey()
        let keyID = "DEMOKEY001"
        let teamID = "DEMOTEAM01"
        var unregistered: [String: Date] = [:]
        // Their apps are uninstalled after they register: APNs' 410 carries a
        // time after the registration (the demo compresses the hours into seconds).
        for n in Self.unregisteredDevices { unregistered[DeviceFleet.sampleToken(n)] = Date(timeIntervalSinceNow: 600) }
        // Two apps: the shop on the provider key above, its companion on a
        // client certificate of the simulator's own CA (as Apple issues them).
        let simulator = try APNsSimulator(configuration: SimulatorConfiguration(
            tls: .generate(directory: apnsDirectory.path), teamID: teamID,
            signingKeys: [keyID: providerKey.publicKey], allowedTopics: [config.topic],
            unregisteredTokens: unregistered,
            tokensOfOtherTopics: Set(Self.otherTopicDevices.map(DeviceFleet.sampleToken)),
            faults: .init(rate503: 0.03, seed: 2026),
            acceptedLogPath: acceptedLog,
            apps: [SimulatedApp(topic: Self.companionTopic, auth: .certificate)]), logger: logger)
        let apnsPort = try await simulator.start()
        let companionCertificate = try simulator.issueClientCertificate(
            // A year, as Apple's are: a 30-day one would be warned about at every run.
            topics: [Self.companionTopic], directory: apnsDirectory.path, name: "companion",
            validity: Date(timeIntervalSinceNow: -3600)...Date(timeIntervalSinceNow: 365 * 86_400),
            password: ReplySecret.generate().base64EncodedString())
        let apns = APNsConfiguration(
            signingKey: APNsSigningKey(privateKey: providerKey), keyID: keyID, teamID: teamID, topic: config.topic,
            baseURLOverride: "https://127.0.0.1:\(apnsPort)", extraTrustedCAPath: simulator.caCertificatePath,
            retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(20), maxDelay: .milliseconds(500)))

        do {
            // The apps' backends: they sign the registration tokens Herald verifies.
            let backend = try await AppTokenIssuer(algorithm: .es256)
            let companionBackend = try await AppTokenIssuer(algorithm: .eddsa)
            let sampleDevices = try SampleDevice.load(config.sqlFiles)
            let outcome = try await withPostgres(config.database, logger: logger) { client in
                // The companion's credential (its .p12) and its backend's key, as
                // `herald apps add-credential` and `add-registration-key` write them.
                let store = AppStore(client: client, logger: logger)
                try await store.addCredential(AppCredentialRecord(
                    app: "companion", name: "demo-certificate", kind: .certificate,
                    certificatePath: companionCertificate.p12Path, passwordFile: companionCertificate.passwordFilePath))
                _ = try await store.addRegistrationKey(app: "companion", publicKeyPEM: companionBackend.publicKeyPEM)
                let keys = AppKeys(try await AppKeys.verifiers(apps: try await store.all(), defaultPEM: backend.publicKeyPEM))
                return try await Self.withAppServer(client: client, secret: secret, keys: keys, logger: logger) { intakeURL in
                    // The apps register their devices themselves.
                    let apps = AppFleet(devices: sampleDevices, intake: intakeURL,
                                        issuers: [AppRecord.defaultName: backend, "companion": companionBackend], logger: logger)
                    try await apps.registerAll()
                    let job = HeraldJob(configuration: config, logger: logger)

                    // Half an hour before the campaigns: every device whose config
                    // lacks a category of the next hour's campaigns gets a
                    // background push; those apps fetch the config.
                    let first = try await job.send(client: client, apns: apns)
                    var accepted = await simulator.accepted
                    var notifications = try await apps.handleRefreshes(accepted)
                    let seen = accepted.count

                    // The campaigns' send_at comes (the demo moves it instead of waiting).
                    try await Self.bringScheduledCampaignsDue(client, logger: logger)
                    let second = try await job.send(client: client, apns: apns)
                    accepted = await simulator.accepted
                    notifications += try await apps.handleRefreshes(Array(accepted.dropFirst(seen)))

                    var devices = DeviceFleet.sampleDevices(logger: logger)
                    for device in sampleDevices { devices.locales[device.token] = device.locale }
                    var fleet = try await devices.answer(notifications, intake: intakeURL)
                    for n in notifications {
                        guard let category = (try? HeraldNotification(json: Data(n.payload)))?.category else { continue }
                        if await apps.config(of: n.deviceToken)?.categories[category] == nil { fleet.withoutButtons += 1 }
                    }
                    // The shop's backend reports what users bought since.
                    let purchases = try await Purchases.post(client: client, intake: intakeURL, issuer: backend, logger: logger)

                    // Later, the Live Activity sale: its start, its two price drops, its end.
                    let sale = SaleActivities(apps: apps, intake: intakeURL)
                    try await sale.registerPushToStart()
                    var saleRuns: [RunSummary] = []
                    let steps = try await Self.saleSteps(client, logger: logger)
                    for step in 0..<steps {
                        try await Self.bringSaleStepDue(client, step: step, logger: logger)
                        if step > 0 {
                            // The shop's own system counts what is left.
                            try await client.query("UPDATE sale_stock SET stock_left = greatest(stock_left - 110, 0), updated_at = now()",
                                                   logger: logger)
                        }
                        let before = await simulator.accepted.count
                        saleRuns.append(try await job.send(client: client, apns: apns))
                        try await sale.show(Array(await simulator.accepted.dropFirst(before)))
                    }
                    // Then the journey "After the order": orders delivered, a question, the
                    // answers, what each calls for, two days, a reminder.
                    let journey = try await OrderJourney(
                        client: client, job: job, apns: apns, simulator: simulator, apps: apps, fleet: devices,
                        devices: sampleDevices, intake: intakeURL, issuer: backend, logger: logger).execute()
                    let report = try await AnalystReport(client: client, logger: logger).render()
                    var outcome = Outcome(runs: [first, second], apps: await apps.report, fleet: fleet, purchases: purchases,
                                          report: report, acceptedLog: acceptedLog)
                    outcome.saleRuns = saleRuns
                    outcome.sale = await sale.finish(steps: steps)
                    outcome.journey = journey
                    return outcome
                }
            }
            await simulator.shutdown()
            return outcome
        } catch {
            await simulator.shutdown()
            throw error
        }
    }

    /// The demo's clock: scheduled campaigns become due now (their end moves with them); the
    /// Live Activity sale comes later (`bringSaleDue`).
    public static func bringScheduledCampaignsDue(_ client: Database, logger: Logger) async throws {
        try await client.query("""
            UPDATE campaigns SET send_at = now(), expires_at = expires_at - (send_at - now())
            WHERE status = 'scheduled' AND send_at > now() AND live_activity IS NULL AND sale_id IS NULL
            """, logger: logger)
    }

    /// The sale's states: its start, each update, its end.
    static func saleSteps(_ client: Database, logger: Logger) async throws -> Int {
        for try await n in try await client.query("""
            SELECT jsonb_array_length(live_activity->'updates') + 2 FROM campaigns WHERE name = 'Winter coats countdown'
            """, logger: logger).decode(Int32.self) {
            return Int(n)
        }
        return 0
    }

    /// The demo's clock for the Live Activity sale: its start becomes due now (its updates and
    /// end move with it); then step `step` falls due as its time coming would, superseding the
    /// one before.
    static func bringSaleStepDue(_ client: Database, step: Int, logger: Logger) async throws {
        if step == 0 {
            try await client.query(try SQLQueries.named("demo/bring-sale-due").query([:]), logger: logger)
        } else {
            let (previous, current) = (Int32(step - 1), Int32(step))
            try await client.query("UPDATE campaigns SET expires_at = now() WHERE sale_id IS NOT NULL AND sale_step = \(previous)",
                                   logger: logger)
            try await client.query(
                "UPDATE campaigns SET send_at = now() - interval '1 second' WHERE sale_id IS NOT NULL AND sale_step = \(current)",
                logger: logger)
        }
    }

    /// The devices register themselves (for `herald demo --dry-run`, which
    /// then prints what each would receive).
    public func registerDevices() async throws -> AppFleetReport {
        let logger = self.logger
        let secret = configuration.replySecret ?? ReplySecret.generate()
        let backend = try await AppTokenIssuer(algorithm: .es256)
        let companionBackend = try await AppTokenIssuer(algorithm: .eddsa)
        let sampleDevices = try SampleDevice.load(configuration.sqlFiles)
        return try await withPostgres(configuration.database, logger: logger) { client in
            let store = AppStore(client: client, logger: logger)
            _ = try await store.addRegistrationKey(app: "companion", publicKeyPEM: companionBackend.publicKeyPEM)
            let keys = AppKeys(try await AppKeys.verifiers(apps: try await store.all(), defaultPEM: backend.publicKeyPEM))
            return try await Self.withAppServer(client: client, secret: secret, keys: keys, logger: logger) { intakeURL in
                let apps = AppFleet(devices: sampleDevices, intake: intakeURL,
                                    issuers: [AppRecord.defaultName: backend, "companion": companionBackend], logger: logger)
                try await apps.registerAll()
                return await apps.report
            }
        }
    }

    /// `herald serve`'s endpoints on a free loopback port while `body` runs.
    static func withAppServer<T: Sendable>(
        client: Database, secret: ReplySecret, keys: AppKeys, logger: Logger,
        _ body: @escaping @Sendable (URL) async throws -> T
    ) async throws -> T {
        let intake = ReplyIntake(store: ReplyStore(client: client, logger: logger),
                                 tokens: ReplyTokens(secret: secret), logger: logger)
        let endpoints = AppEndpoints(client: client, keys: keys, logger: logger)
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        // The whole simulated fleet posts from 127.0.0.1: one address, hundreds of phones.
        var limits = AppServerLimits()
        limits.perAddress = .init(100_000, per: .seconds(1))
        let app = AppHTTPServer.application(intake: intake, app: endpoints, host: "127.0.0.1", port: 0, limits: limits,
                                           logger: logger) { port in
            portSink.yield(port)
        }
        let services = ServiceGroup(configuration: .init(services: [.init(service: app)], logger: logger))
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await services.run()
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next(), let url = URL(string: "http://127.0.0.1:\(port)") else {
                throw CancellationError()
            }
            do {
                let result = try await body(url)
                await services.triggerGracefulShutdown()
                return result
            } catch {
                await services.triggerGracefulShutdown()
                throw error
            }
        }
    }
}
