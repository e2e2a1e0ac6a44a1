// A second APNs sender for the benchmark, built on swift-nio-http2's `NIOHTTP2Handler` instead of
// the project's hand-written framing (Sources/APNs): the A/B of `herald-bench --transport nio-http2`.
//
// Its shape is the cheapest found for swift-nio-http2, so that the comparison is with a
// well-built client, not a straw man:
// - one connection-level handler after `NIOHTTP2Handler` that writes and reads `HTTP2Frame`s and
//   assigns its own stream ids (no stream multiplexer, no channel per stream);
// - the frames of one event-loop tick coalesced into one buffer (`WriteCoalescer`, between TLS
//   and HTTP/2: NIOHTTP2Handler writes three buffers a request and NIOSSL makes a TLS record of
//   each) and flushed once per tick;
// - HPACK by the handler's encoder: `:path`, `apns-id` non-indexable, the rest indexable (the
//   constant fields become one-byte indices); header-block and content-length validation off for
//   our own well-formed headers;
// - a thin async layer: one continuation per request, the work on the connection's event loop
//   (callers that run on `taskExecutor` hand nothing over), the body buffer made once per
//   notification and shared across attempts;
// - the same TLS setup as `APNsClient` (ALPN "h2", TLS 1.2+, the sink's CA trusted beside the
//   system roots), the same pool rule (the connection with the most free streams, at most
//   `streams` in flight on each, at most `connections`, opened one at a time as requests wait),
//   the same provider token (ES256, cached, renewed after 50 minutes), the same local checks,
//   request deadline and retries of what the server did not process.
// What it leaves out that the project's client has: PING keepalive of idle connections, a
// graceful drain of in-flight requests at shutdown, Apple's error reasons beyond the body's text.
// None of them costs anything while notifications flow.
import APNs
import Crypto
import Foundation
import HeraldCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// A notification's answer: the HTTP status and body (nil status: no answer).
struct H2SendResult: Sendable {
    var status: Int?
    var body: ByteBuffer?
    var attempts: Int
    var retried: Int
    var failure: String?
}

/// The APNs sender on `NIOHTTP2Handler`. A ServiceLifecycle `Service` like `APNsClient`: it runs
/// until graceful shutdown, then closes its connections.
final class NIOH2APNsClient: Service, Sendable {
    let eventLoop: EventLoop
    private let executor: EventLoopTaskExecutor
    private let pool: NIOLoopBoundBox<H2Pool>
    private let submissions = NIOLockedValueBox(Submissions())
    private let tokens: ProviderTokenStore
    private let authority: String
    private let topic: String
    private let requestTimeout: TimeAmount
    private let maxAttempts = 3

    private struct Submissions {
        var pending: [H2Request] = []
        var drainScheduled = false
        var isShutdown = false
    }

    init(
        url: String,
        caPath: String?,
        connections: Int,
        streamsPerConnection: Int,
        privateKey: P256.Signing.PrivateKey,
        keyID: String,
        teamID: String,
        topic: String,
        requestTimeout: TimeAmount = .seconds(30),
        eventLoopGroup: any EventLoopGroup
    ) throws {
        guard let components = URLComponents(string: url), components.scheme == "https", let host = components.host else {
            throw H2ClientError.badURL(url)
        }
        let port = components.port ?? 443
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        if let caPath {
            let certificates = try NIOSSLCertificate.fromPEMFile(caPath)
            guard !certificates.isEmpty else { throw H2ClientError.badCA(caPath) }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        let sslContext = try NIOSSLContext(configuration: tls)
        let isIP = host.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" }
        self.eventLoop = eventLoopGroup.next()
        self.executor = EventLoopTaskExecutor(eventLoop: eventLoop)
        self.authority = port == 443 ? host : "\(host):\(port)"
        self.topic = topic
        self.requestTimeout = requestTimeout
        self.tokens = ProviderTokenStore(key: APNsSigningKey(privateKey: privateKey), keyID: keyID, teamID: teamID,
                                         clock: { Date() })
        self.pool = NIOLoopBoundBox.makeBoxSendingValue(
            H2Pool(
                eventLoop: eventLoop,
                sslContext: sslContext,
                host: host,
                port: port,
                serverHostname: isIP ? nil : host,
                maxConnections: max(1, connections),
                streamsPerConnection: max(1, streamsPerConnection)
            ),
            eventLoop: eventLoop
        )
    }

    /// The connections' event loop as a task executor (as `APNsClient.taskExecutor`).
    var taskExecutor: any TaskExecutor { executor }

    func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    func shutdown() async {
        let first = submissions.withLockedValue { state -> Bool in
            defer { state.isShutdown = true }
            return !state.isShutdown
        }
        guard first else { return }
        let pool = self.pool
        try? await eventLoop.flatSubmit { pool.value.shutdown() }.get()
    }

    /// Sends one notification; retries what was not processed, lost or timed out, and 429/5xx,
    /// up to three attempts (the bench's APNsClient retry policy). Never throws.
    func send(_ notification: APNsNotification) async -> H2SendResult {
        // The checks `APNsClient` makes before sending: the same ones.
        if let refusal = APNsClient.localRefusal(notification) {
            return H2SendResult(status: nil, body: nil, attempts: 0, retried: 0, failure: "\(refusal)")
        }
        let apnsID = UUIDText.lowercased(notification.apnsID)
        let body = ByteBuffer(bytes: notification.payload)
        let topic = notification.topic ?? self.topic
        var attempts = 0
        var retried = 0
        var unprocessed = 0
        var lastFailure = "connectionFailed"
        while true {
            guard let token = try? tokens.current() else {
                return H2SendResult(status: nil, body: nil, attempts: attempts, retried: retried, failure: "invalidProviderToken")
            }
            var headers = HPACKHeaders()
            headers.reserveCapacity(12)
            headers.add(name: ":method", value: "POST")
            headers.add(name: ":scheme", value: "https")
            headers.add(name: ":path", value: "/3/device/" + notification.deviceToken, indexing: .nonIndexable)
            headers.add(name: ":authority", value: authority)
            headers.add(name: "authorization", value: token.headerValue)
            headers.add(name: "apns-topic", value: topic)
            headers.add(name: "apns-push-type", value: notification.pushType)
            headers.add(name: "apns-priority", value: notification.priority == 10 ? "10" : String(notification.priority))
            if let expiration = notification.expiration {
                headers.add(name: "apns-expiration", value: String(expiration))
            }
            if let collapseID = notification.collapseID {
                headers.add(name: "apns-collapse-id", value: collapseID)
            }
            headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
            headers.add(name: "content-length", value: String(notification.payload.count))

            let outcome = await attempt(headers: headers, body: body)
            switch outcome {
            case .response(let status, let responseBody):
                attempts += 1
                if status == 200 || !(status == 429 || status >= 500) {
                    return H2SendResult(
                        status: status,
                        body: responseBody,
                        attempts: attempts,
                        retried: retried,
                        failure: status == 200 ? nil : "HTTP \(status) \(responseBody.map { String(buffer: $0) } ?? "")"
                    )
                }
                lastFailure = "HTTP \(status)"
            case .notProcessed:
                unprocessed += 1
                retried += 1
                if unprocessed <= 3 * maxAttempts + 10 { continue }
                unprocessed = 0
                attempts += 1
                lastFailure = "notProcessed"
            case .shutdown:
                return H2SendResult(status: nil, body: nil, attempts: attempts, retried: retried, failure: "shutdown")
            case .timedOut:
                attempts += 1
                lastFailure = "timedOut"
            case .connectionFailed:
                attempts += 1
                lastFailure = "connectionFailed"
            }
            guard attempts < maxAttempts, !Task.isCancelled else {
                return H2SendResult(status: nil, body: nil, attempts: attempts, retried: retried, failure: lastFailure)
            }
            try? await Task.sleep(for: .milliseconds(5 << (attempts - 1)))
            retried += 1
        }
    }

    private func attempt(headers: HPACKHeaders, body: ByteBuffer) async -> H2Attempt {
        await withCheckedContinuation { continuation in
            enqueue(H2Request(headers: headers, body: body, deadline: .now() + requestTimeout, continuation: continuation))
        }
    }

    /// Onto the event loop: directly when already there, else in batches (one wake-up of the
    /// loop per batch), as `APNsClient` does.
    private func enqueue(_ request: H2Request) {
        if eventLoop.inEventLoop {
            pool.value.submit(request)
            return
        }
        enum Action { case rejected, scheduleDrain, nothing }
        let action = submissions.withLockedValue { state -> Action in
            if state.isShutdown { return .rejected }
            state.pending.append(request)
            if state.drainScheduled { return .nothing }
            state.drainScheduled = true
            return .scheduleDrain
        }
        switch action {
        case .rejected:
            request.continuation.resume(returning: .shutdown)
        case .nothing:
            break
        case .scheduleDrain:
            let pool = self.pool
            let submissions = self.submissions
            eventLoop.execute {
                let batch = submissions.withLockedValue { state -> [H2Request] in
                    let batch = state.pending
                    state.pending = []
                    state.pending.reserveCapacity(batch.count)
                    state.drainScheduled = false
                    return batch
                }
                let pool = pool.value
                for request in batch { pool.submit(request) }
            }
        }
    }
}

enum H2ClientError: Error {
    case badURL(String)
    case badCA(String)
}
