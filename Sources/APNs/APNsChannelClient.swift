import AsyncHTTPClient
import Foundation
import HeraldCore
import NIOCore
import NIOHTTP1
import NIOSSL

/// APNs' broadcast channels (DESIGN, contract 10): the channel management API (create, read,
/// list, delete) and the broadcast push that reaches every activity subscribed to a channel.
/// A sale makes a handful of these calls, so they go through AsyncHTTPClient's HTTP/2, not the
/// push client's own connection pool.
public final class APNsChannelClient: Sendable {
    /// An answer other than success: APNs' status and reason, and whether to try again later.
    public struct Failure: Error, Hashable, CustomStringConvertible {
        /// Nil when no answer came (a connection that failed or timed out).
        public var status: Int?
        public var reason: String
        /// 429, 5xx and a lost connection: the same call may succeed later.
        public var transient: Bool {
            guard let status else { return true }
            return status == 429 || status >= 500
        }
        public init(status: Int?, reason: String) {
            self.status = status
            self.reason = reason
        }
        public var description: String {
            switch status {
            case nil: "APNs could not be reached: \(reason)"
            case 0?: reason
            case let status?: "APNs answered \(status) \(reason)"
            }
        }

        /// Refused before any call (no usable credential): not transient, `reason` is the whole message.
        public static func refused(_ reason: String) -> Failure { Failure(status: 0, reason: reason) }
    }

    private let http: HTTPClient
    private let tokens: ProviderTokenStore
    private let managementBase: String
    private let pushBase: String
    private let timeout: TimeAmount

    /// `managementBaseURL`/`pushBaseURL` replace Apple's hosts (the simulator's);
    /// `extraTrustedCAPath` is trusted beside the system's roots. Apple's broadcast API takes a
    /// certificate too, but a Live Activity's start does not, so a sale needs a token credential.
    public init(credential: APNsCredential, environment: APNsEnvironment, managementBaseURL: String? = nil,
                pushBaseURL: String? = nil, extraTrustedCAPath: String? = nil, timeout: Duration = .seconds(30),
                tokenClock: @escaping @Sendable () -> Date = { Date() }) throws {
        guard case .token(let key, let keyID, let teamID) = credential else {
            throw APNsConfigurationError.tokenRequired(
                "a sale on broadcast channels needs a token credential (a .p8 signing key): Apple's channel and broadcast API takes a certificate too, but push-to-start, which starts every activity on the channel, takes none")
        }
        tokens = ProviderTokenStore(key: key, keyID: keyID, teamID: teamID, clock: tokenClock)
        let sandbox = environment == .sandbox
        managementBase = managementBaseURL
            ?? (sandbox ? "https://api-manage-broadcast.sandbox.push.apple.com:2195" : "https://api-manage-broadcast.push.apple.com:2196")
        pushBase = pushBaseURL ?? "https://\(environment.host):443"
        var tls = TLSConfiguration.makeClientConfiguration()
        if let extraTrustedCAPath { tls.additionalTrustRoots = [.file(extraTrustedCAPath)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.timeout = .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000)
    }

    /// Makes a channel for `bundle`'s Live Activities; returns its id.
    public func create(bundle: String, storagePolicy: Int) async throws(Failure) -> String {
        let body = "{\"message-storage-policy\":\(storagePolicy),\"push-type\":\"LiveActivity\"}"
        let answer = try await call(.POST, managementBase + Self.channels(bundle), body: Array(body.utf8), expect: 201)
        guard let id = answer.headers.first(name: "apns-channel-id"), !id.isEmpty else {
            throw Failure(status: 201, reason: "no apns-channel-id in the answer")
        }
        return id
    }

    /// The channel's storage policy (0 No Message Stored, 1 Most Recent Message Stored).
    public func read(bundle: String, channel: String) async throws(Failure) -> Int {
        let answer = try await call(.GET, managementBase + Self.channels(bundle), headers: [("apns-channel-id", channel)], expect: 200)
        guard let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
              let policy = object["message-storage-policy"] as? Int else {
            throw Failure(status: 200, reason: "an answer without message-storage-policy")
        }
        return policy
    }

    /// Every channel of `bundle`.
    public func list(bundle: String) async throws(Failure) -> [String] {
        let answer = try await call(.GET, managementBase + "/1/apps/\(bundle)/all-channels", expect: 200)
        guard let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
              let channels = object["channels"] as? [String] else {
            throw Failure(status: 200, reason: "an answer without channels")
        }
        return channels
    }

    /// Deletes a channel (APNs may still deliver what it stored).
    public func delete(bundle: String, channel: String) async throws(Failure) {
        _ = try await call(.DELETE, managementBase + Self.channels(bundle), headers: [("apns-channel-id", channel)], expect: 204)
    }

    /// One Live Activity update or end for every activity on `channel`. `expiration` nil is 0
    /// (deliver once, store nothing: the only value a No Message Stored channel takes).
    public func broadcast(bundle: String, channel: String, payload: [UInt8], priority: Int, expiration: Date?,
                          requestID: UUID = UUID()) async throws(Failure) {
        let seconds = expiration.map { Int64($0.timeIntervalSince1970) } ?? 0
        _ = try await call(.POST, pushBase + "/4/broadcasts/apps/\(bundle)", headers: [
            ("apns-channel-id", channel), ("apns-push-type", "liveactivity"), ("apns-priority", String(priority)),
            ("apns-expiration", String(seconds)), ("apns-request-id", requestID.uuidString.lowercased()),
        ], body: payload, expect: 200)
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    private static func channels(_ bundle: String) -> String { "/1/apps/\(bundle)/channels" }

    private func call(_ method: HTTPMethod, _ url: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
                      expect: Int) async throws(Failure) -> (headers: HTTPHeaders, body: [UInt8]) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        do {
            request.headers.add(name: "authorization", value: try tokens.current().headerValue)
        } catch {
            throw Failure(status: nil, reason: "no provider token: \(error)")
        }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response: HTTPClientResponse
        let bytes: ByteBuffer
        do {
            response = try await http.execute(request, timeout: timeout)
            bytes = try await response.body.collect(upTo: 1 << 20)
        } catch {
            throw Failure(status: nil, reason: "\(error)")
        }
        let status = Int(response.status.code)
        guard status == expect else {
            let reason = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView)) as? [String: Any])?["reason"] as? String
            throw Failure(status: status, reason: reason ?? "HTTP \(status)")
        }
        return (response.headers, Array(bytes.readableBytesView))
    }
}
