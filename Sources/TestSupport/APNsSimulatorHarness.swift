import APNs
import APNsSimulator
import Crypto
import Foundation
import Logging
import NIOPosix

public enum APNsSimulatorHarness {
    public static let defaultTopic = "com.example.herald"

    /// Starts a simulator; `customize` adjusts its configuration (faults, unregistered tokens…).
    public static func start(
        logger: Logger = Logger(label: "apns-simulator-test"),
        customize: (inout SimulatorConfiguration) -> Void = { _ in }
    ) async throws -> RunningAPNsSimulator {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("apns-sim-\(UUID().uuidString)").path
        let key = P256.Signing.PrivateKey()
        let keyID = "KEY" + String(UUID().uuidString.prefix(7).filter(\.isLetter).uppercased())
        let teamID = "TEAM123456"
        var configuration = SimulatorConfiguration(
            host: "127.0.0.1",
            port: 0,
            tls: .generate(directory: directory),
            teamID: teamID,
            signingKeys: [keyID: key.publicKey],
            allowedTopics: [defaultTopic]
        )
        customize(&configuration)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let simulator: APNsSimulator
        let port: Int
        do {
            simulator = try APNsSimulator(configuration: configuration, eventLoopGroup: group, logger: logger)
            port = try await simulator.start()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        var client = APNsConfiguration(
            signingKey: APNsSigningKey(privateKey: key),
            keyID: keyID,
            teamID: teamID,
            topic: defaultTopic,
            baseURLOverride: "https://127.0.0.1:\(port)",
            extraTrustedCAPath: simulator.caCertificatePath,
            requestTimeout: .seconds(20),
            retry: RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(2), maxDelay: .milliseconds(50))
        )
        client.maxConnections = 4
        client.channelsBaseURLOverride = simulator.channelsPort.map { "https://127.0.0.1:\($0)" }
        return RunningAPNsSimulator(
            clientConfiguration: client,
            simulator: simulator,
            directory: directory,
            keyID: keyID,
            teamID: teamID,
            topic: defaultTopic,
            eventLoopGroup: group
        )
    }

    /// A random 64-hex-digit device token.
    public static func randomDeviceToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

/// Runs `body` with a simulator of its own (`customize` sets its faults),
/// stopped afterwards whatever happens.
public func withSimulator<T: Sendable>(
    customize: (inout SimulatorConfiguration) -> Void = { _ in },
    _ body: (RunningAPNsSimulator) async throws -> T
) async throws -> T {
    let sim = try await APNsSimulatorHarness.start(logger: TestDatabase.logger, customize: customize)
    do {
        let result = try await body(sim)
        await sim.stop()
        return result
    } catch {
        await sim.stop()
        throw error
    }
}

extension APNsSimulatorHarness {
    /// A second app's topic, for tests of several apps in one client.
    public static let companionTopic = "com.example.companion"

    /// Starts a simulator that serves `apps` besides the default token app (`defaultTopic`, whose
    /// key the client configuration signs with).
    public static func start(
        apps: [SimulatedApp],
        logger: Logger = Logger(label: "apns-simulator-test"),
        customize: (inout SimulatorConfiguration) -> Void = { _ in }
    ) async throws -> RunningAPNsSimulator {
        try await start(logger: logger) { configuration in
            configuration.apps += apps
            customize(&configuration)
        }
    }
}
