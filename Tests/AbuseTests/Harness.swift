import AppServer
import Foundation
import HeraldCore
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import ServiceLifecycle
import Store
import TestSupport

/// The reply secret of every intake these tests start.
let abuseSecret: ReplySecret = {
    // 32 fixed bytes; a test key, not a real one.
    let bytes = (0..<32).map { UInt8($0 &* 7 &+ 3) }
    guard let secret = try? ReplySecret(base64: Data(bytes).base64EncodedString()) else { return .generate() }
    return secret
}()
let abuseTokens = ReplyTokens(secret: abuseSecret)

/// A database with three deliveries: 1 of a poster (buttons love_it,
/// dont_care), 2 of a feedback prompt (text input `comment`), 3 of the poster.
func withIntakeDatabase<T: Sendable>(_ body: @Sendable (ReplyIntake, Database, DatabaseConfiguration) async throws -> T) async throws -> T {
    try await TestDatabase.with { client, config in
        try await client.exec(Fixtures.threeDeliveries)
        let intake = ReplyIntake(store: ReplyStore(client: client, logger: TestDatabase.logger),
                                 tokens: abuseTokens, logger: TestDatabase.logger)
        return try await body(intake, client, config)
    }
}

/// Runs the real server (`AppHTTPServer.application`, as `herald serve` does)
/// on a free loopback port under a ServiceGroup, for the time of `body`.
/// `app`: the app's endpoints (device registration with a verifier); nil:
/// registration answers 503 as when no key is configured.
func withServer<T: Sendable>(
    _ intake: ReplyIntake, app endpoints: AppEndpoints? = nil, limits: AppServerLimits, logger: Logger = TestDatabase.logger,
    metrics: (@Sendable () -> String)? = nil,
    _ body: @Sendable (Int) async throws -> T
) async throws -> T {
    let (ports, sink) = AsyncStream.makeStream(of: Int.self)
    let app = AppHTTPServer.application(intake: intake, app: endpoints, host: "127.0.0.1", port: 0, limits: limits, logger: logger,
                                       onRunning: { port in sink.yield(port) }, metrics: metrics)
    let group = ServiceGroup(configuration: .init(services: [.init(service: app)], logger: logger))
    return try await withThrowingTaskGroup(of: T?.self) { tasks in
        tasks.addTask {
            try await group.run()
            return nil
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(port))
        } catch {
            result = .failure(error)
        }
        await group.triggerGracefulShutdown()
        for try await _ in tasks {}
        return try result.get()
    }
}

/// The app backend's key pair (ES256) of these tests: it signs registration
/// tokens, the server verifies them.
struct AppKeys: Sendable {
    let issuer: AppTokenIssuer
    let verifier: AppTokenVerifier

    static func make() async throws -> AppKeys {
        let issuer = try await AppTokenIssuer(algorithm: .es256)
        return AppKeys(issuer: issuer, verifier: try await AppTokenVerifier(publicKeyPEM: issuer.publicKeyPEM))
    }

    func endpoints(_ client: Database) -> AppEndpoints {
        AppEndpoints(client: client, verifier: verifier, logger: TestDatabase.logger)
    }

    /// A token for `user` issued `age` seconds ago, living `lifetime` seconds.
    func bearer(_ user: String, age: TimeInterval = 0, lifetime: TimeInterval = 900) async throws -> String {
        try await issuer.token(user: user, issuedAt: Date(timeIntervalSinceNow: -age), lifetime: lifetime)
    }

    /// The APNs token of test device `n`: 64 hex digits.
    static func device(_ n: Int) -> String {
        let hex = String(n, radix: 16)
        return String(repeating: "a", count: 64 - hex.count) + hex
    }

    /// A registration body (as JSON text) of `user` with these fields added.
    static func registration(_ user: String, _ extra: [(String, String)] = []) -> [UInt8] {
        var fields: [(String, [UInt8])] = [
            ("environment", Array("\"sandbox\"".utf8)), ("user", Array(HostileTable.string(user).utf8)),
            ("locale", Array("\"fr-CA\"".utf8)), ("time_zone", Array("\"Europe/Paris\"".utf8)),
        ]
        for (key, value) in extra {
            fields.removeAll { $0.0 == key }
            fields.append((key, Array(value.utf8)))
        }
        return HostileTable.object(fields)
    }

    /// The raw request of `PUT /v1/devices/{token}`.
    static func put(_ token: String, bearer: String?, body: [UInt8], contentType: String? = "application/json",
                    headers extra: [(String, String)] = []) -> [UInt8] {
        var headers: [(String, String)] = extra
        if let contentType { headers.append(("Content-Type", contentType)) }
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        return RawHTTP.request(method: "PUT", path: "/v1/devices/\(token)", headers: headers, body: body)
    }

    /// The raw request of `POST /v1/conversions` for `user`.
    static func conversion(user: String, bearer: String?, key: String, event: String = "purchase",
                           contentType: String = "application/json", body: [UInt8]? = nil) -> [UInt8] {
        var headers: [(String, String)] = [("Content-Type", contentType)]
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        let json = body ?? Array(#"{"user":"\#(user)","event":"\#(event)","occurred_at":"2026-11-20T10:00:00Z","amount":"9.90","currency":"EUR","idempotency_key":"\#(key)"}"#.utf8)
        return RawHTTP.request(method: "POST", path: "/v1/conversions", headers: headers, body: json)
    }

    static func delete(_ token: String, bearer: String?) -> [UInt8] {
        RawHTTP.request(method: "DELETE", path: "/v1/devices/\(token)", headers: bearer.map { [("Authorization", "Bearer \($0)")] } ?? [])
    }
}

/// Limits that never get in the way (for tests of something else).
var unlimited: AppServerLimits {
    var limits = AppServerLimits()
    limits.perAddress = .init(1_000_000, per: .seconds(1))
    limits.perDelivery = .init(1_000_000, per: .seconds(1))
    limits.perDevice = .init(1_000_000, per: .seconds(1))
    return limits
}

/// One HTTP answer as read off the socket.
struct RawResponse: Sendable {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    var json: [String: String]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: String]
    }
}

/// A plain TCP client: writes exactly the bytes given (hostile ones
/// included) and reads the answer, so nothing between the test and the
/// server tidies a request up.
enum RawHTTP {
    static func request(
        method: String = "POST", path: String = "/v1/replies",
        headers: [(String, String)] = [("Content-Type", "application/json")],
        body: [UInt8] = [], contentLength: Int? = nil, extraHeaderBytes: [UInt8] = []
    ) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || contentLength != nil {
            head += "Content-Length: \(contentLength ?? body.count)\r\n"
        }
        return Array(head.utf8) + extraHeaderBytes + Array("\r\n".utf8) + body
    }

    /// Sends `bytes` (then half-closes when `halfClose`) and reads until the
    /// answer is complete or the server closes. `nil`: no answer at all.
    static func exchange(port: Int, _ bytes: [UInt8], halfClose: Bool = false) async throws -> RawResponse? {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(bytes: bytes))
            if halfClose { outbound.finish() }
            var received: [UInt8] = []
            do {
                for try await chunk in inbound {
                    received += chunk.readableBytesView
                    if let response = parse(received), response.complete { return response.response }
                }
            } catch {
                // A reset after the answer still leaves the answer readable.
            }
            return parse(received)?.response
        }
    }

    static func parse(_ bytes: [UInt8]) -> (response: RawResponse, complete: Bool)? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = lines.first else { return nil }
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = Array(bytes[(end + 4)...])
        let length = headers["content-length"].flatMap(Int.init) ?? 0
        return (RawResponse(status: status, headers: headers, body: Array(body.prefix(length))), body.count >= length)
    }

    /// Sends `bytes` one at a time, `interval` apart, until all are sent or
    /// the server closes the connection. Returns how many were sent and
    /// whether the server closed it.
    static func trickle(port: Int, _ bytes: [UInt8], interval: Duration) async throws -> (sent: Int, closedByServer: Bool) {
        try await trickleAfter(port: port, prefix: [], rest: bytes, interval: interval)
    }
}

extension RawHTTP {
    /// Sends `prefix` at once, then `rest` a byte at a time.
    static func trickleAfter(port: Int, prefix: [UInt8], rest: [UInt8], interval: Duration) async throws -> (sent: Int, closedByServer: Bool) {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port).get()
        if !prefix.isEmpty { try await channel.writeAndFlush(ByteBuffer(bytes: prefix)).get() }
        var sent = 0
        for byte in rest {
            guard channel.isActive else { break }
            do {
                try await channel.writeAndFlush(ByteBuffer(bytes: [byte])).get()
            } catch {
                break
            }
            sent += 1
            try await Task.sleep(for: interval)
        }
        let closed = !channel.isActive
        try? await channel.close().get()
        return (sent, closed)
    }

    /// Opens a connection, sends `request` (nothing by default), and tells
    /// whether the server closes it before `limit` (a bound for the test, far
    /// above the server's timeout).
    static func waitsForClose(port: Int, within limit: Duration, after request: [UInt8] = []) async throws -> Bool {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port).get()
        if !request.isEmpty { try await channel.writeAndFlush(ByteBuffer(bytes: request)).get() }
        let closed = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await channel.closeFuture.get()
                return true
            }
            group.addTask {
                try await Task.sleep(for: limit)
                try? await channel.close().get()
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        try? await channel.close().get()
        return closed
    }
}

/// The APNs simulator (HTTP/2 + TLS on loopback) for the time of `body`.
extension RawHTTP {
    /// Sends `bytes` and returns everything the server sends until it closes.
    static func readAll(port: Int, _ bytes: [UInt8]) async throws -> [UInt8] {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(bytes: bytes))
            var received: [UInt8] = []
            do {
                for try await chunk in inbound { received += chunk.readableBytesView }
            } catch {}
            return received
        }
    }
}
