import APNs
import APNsSimulator
import Crypto
import Foundation
import Logging
import NIOPosix

/// An APNs simulator running in-process on a free loopback port with TLS, and a client
/// configuration that trusts it and signs with a fresh P-256 key the simulator knows.
public struct RunningAPNsSimulator: Sendable {
    public var clientConfiguration: APNsConfiguration
    public let simulator: APNsSimulator
    /// The directory holding the generated CA, certificate and key.
    public let directory: String
    public let keyID: String
    public let teamID: String
    public let topic: String
    /// The simulator's own event loop, as a command would give it.
    let eventLoopGroup: MultiThreadedEventLoopGroup

    /// Stops the simulator and removes its files.
    public func stop() async {
        await simulator.shutdown()
        try? await eventLoopGroup.shutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension RunningAPNsSimulator {
    /// Issues a client certificate for `topics`, signed by the simulator's client CA, into the
    /// simulator's directory (removed by `stop()`), with a random password.
    public func issueClientCertificate(
        topics: [String],
        name: String? = nil,
        validity: ClosedRange<Date>? = nil
    ) throws -> IssuedClientCertificate {
        try simulator.issueClientCertificate(
            topics: topics,
            directory: directory,
            name: name ?? "client-\(UUID().uuidString.prefix(8).lowercased())",
            validity: validity,
            password: UUID().uuidString
        )
    }
}
