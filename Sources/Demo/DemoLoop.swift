import APNs
import APNsSimulator
import Crypto
import Foundation
import HeraldCore
import Hummingbird
import Logging
import PostgresNIO
import ReplyIntake
import Runner
import ServiceLifecycle
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

    public init(configuration: HeraldConfiguration, workDirectory: URL, logger: Logger) {
        self.configuration = configuration
        self.workDirectory = workDirectory
        self.logger = logger
    }

    public struct Outcome: Sendable {
        public var run: RunSummary
        public var fleet: DeviceFleet.Report
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
        for n in Self.unregisteredDevices { unregistered[DeviceFleet.sampleToken(n)] = Date(timeIntervalSinceNow: -86_400) }
        let simulator = try APNsSimulator(configuration: SimulatorConfiguration(
            tls: .generate(directory: apnsDirectory.path), teamID: teamID,
            signingKeys: [keyID: providerKey.publicKey], allowedTopics: [config.topic],
            unregisteredTokens: unregistered,
            tokensOfOtherTopics: Set(Self.otherTopicDevices.map(DeviceFleet.sampleToken)),
            faults: .init(rate503: 0.03, seed: 2026),
            acceptedLogPath: acceptedLog), logger: logger)
        let apnsPort = try await simulator.start()
        let apns = APNsConfiguration(
            signingKey: APNsSigningKey(privateKey: providerKey), keyID: keyID, teamID: teamID, topic: config.topic,
            baseURLOverride: "https://127.0.0.1:\(apnsPort)", extraTrustedCAPath: simulator.caCertificatePath,
            retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(20), maxDelay: .milliseconds(500)))

        do {
            let outcome = try await withPostgres(config.database, logger: logger) { client in
                // The reply intake, on a free port of its own.
                let intake = ReplyIntake(store: ReplyStore(client: client, logger: logger),
                                         tokens: ReplyTokens(secret: secret), logger: logger)
                let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
                // The whole simulated fleet posts from 127.0.0.1: one address, hundreds of phones.
                var limits = IntakeLimits()
                limits.perAddress = .init(100_000, per: .seconds(1))
                let app = IntakeServer.application(intake: intake, host: "127.0.0.1", port: 0, limits: limits, logger: logger) { port in
                    portSink.yield(port)
                }
                let services = ServiceGroup(configuration: .init(services: [.init(service: app)], logger: logger))
                return try await withThrowingTaskGroup(of: Outcome?.self) { group in
                    group.addTask {
                        try await services.run()
                        return nil
                    }
                    var iterator = ports.makeAsyncIterator()
                    guard let intakePort = await iterator.next(),
                          let intakeURL = URL(string: "http://127.0.0.1:\(intakePort)") else { throw CancellationError() }
                    let run = try await HeraldJob(configuration: config, logger: logger).send(client: client, apns: apns)
                    var devices = DeviceFleet.sampleDevices(logger: logger)
                    for try await (token, locale) in try await client.query("""
                        SELECT dv.token, u.locale FROM devices dv JOIN users u ON u.id = dv.user_id
                        """, logger: logger).decode((String, String).self) {
                        devices.locales[token] = locale
                    }
                    let fleet = try await devices.answer(await simulator.accepted, intake: intakeURL)
                    let report = try await AnalystReport(client: client, logger: logger).render()
                    await services.triggerGracefulShutdown()
                    return Outcome(run: run, fleet: fleet, report: report, acceptedLog: acceptedLog)
                }
            }
            await simulator.shutdown()
            return outcome
        } catch {
            await simulator.shutdown()
            throw error
        }
    }
}
