import APNs
import Foundation
import HeraldCore
import NIOConcurrencyHelpers
import Store

/// APNs' broadcast channels as a run uses them (DESIGN, contract 10): make a sale's channel,
/// send a step once to it, delete it after the sale. One channel belongs to one app's bundle in
/// one environment, sent with that app's token credential.
public protocol ChannelTransport: Sendable {
    func create(_ key: ChannelKey) async throws(APNsChannelClient.Failure) -> String
    func broadcast(_ key: ChannelKey, channel: String, payload: [UInt8], priority: Int, expiration: Date?,
                   requestID: UUID) async throws(APNsChannelClient.Failure)
    func delete(_ key: ChannelKey, channel: String) async throws(APNsChannelClient.Failure)
    func shutdown() async
}

/// The channel transport of a run that sends through APNs: one `APNsChannelClient` per
/// credential and environment, made when a sale first needs it, with the push client's
/// credentials, hosts (`APNS_URL`, `APNS_CHANNELS_URL`) and trusted roots.
public final class APNsChannels: ChannelTransport {
    /// The storage policy of every channel Herald makes: Most Recent Message Stored (DESIGN,
    /// contract 10, "Broadcast channels", says why).
    public static let storagePolicy = 1

    private let configuration: APNsConfiguration
    private let apps: AppRoutes
    private let clients = NIOLockedValueBox<[String: APNsChannelClient]>([:])

    public init(configuration: APNsConfiguration, apps: AppRoutes) {
        self.configuration = configuration
        self.apps = apps
    }

    private func client(_ key: ChannelKey) throws(APNsChannelClient.Failure) -> (APNsChannelClient, bundle: String) {
        let bundle = apps.topic(app: key.app)
        guard let name = apps.credential(app: key.app, environment: key.environment) ?? configuration.defaultCredential,
              let credential = configuration.credentials[name] else {
            throw APNsChannelClient.Failure.refused("\(apps.describe(app: key.app, environment: key.environment)) has no credential to manage channels with")
        }
        let id = "\(name)|\(key.environment.rawValue)"
        if let made = clients.withLockedValue({ $0[id] }) { return (made, bundle) }
        let made: APNsChannelClient
        do {
            made = try APNsChannelClient(credential: credential, environment: key.environment,
                                         managementBaseURL: configuration.channelsBaseURLOverride,
                                         pushBaseURL: configuration.baseURLOverride,
                                         extraTrustedCAPath: configuration.extraTrustedCAPath,
                                         timeout: configuration.requestTimeout, tokenClock: configuration.tokenClock)
        } catch {
            throw APNsChannelClient.Failure.refused("\(apps.describe(app: key.app, environment: key.environment)): \(error)")
        }
        let kept = clients.withLockedValue { clients in
            if let other = clients[id] { return other }
            clients[id] = made
            return made
        }
        if kept !== made { Task { await made.shutdown() } }
        return (kept, bundle)
    }

    public func create(_ key: ChannelKey) async throws(APNsChannelClient.Failure) -> String {
        let (client, bundle) = try client(key)
        return try await client.create(bundle: bundle, storagePolicy: Self.storagePolicy)
    }

    public func broadcast(_ key: ChannelKey, channel: String, payload: [UInt8], priority: Int, expiration: Date?,
                          requestID: UUID) async throws(APNsChannelClient.Failure) {
        let (client, bundle) = try client(key)
        try await client.broadcast(bundle: bundle, channel: channel, payload: payload, priority: priority,
                                   expiration: expiration, requestID: requestID)
    }

    public func delete(_ key: ChannelKey, channel: String) async throws(APNsChannelClient.Failure) {
        let (client, bundle) = try client(key)
        try await client.delete(bundle: bundle, channel: channel)
    }

    public func shutdown() async {
        let all = clients.withLockedValue { clients in
            defer { clients = [:] }
            return Array(clients.values)
        }
        for client in all { await client.shutdown() }
    }
}
