import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import PostgresNIO
import Store

/// The request context of the app server: Hummingbird's basics plus the peer's
/// address, which the rate limits key on.
public struct AppRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// The HTTP side of the reply loop: `POST /v1/replies`, the app's endpoints
/// (`AppEndpoints`: device registration, the localized
/// `GET /v1/notification-config`), `GET /healthz` and `GET /v1/openapi.json`
/// (the document of all of them, `openapi.json`).
public enum AppHTTPServer {
    /// The routes, behind the middleware every route gets: JSON errors
    /// (404/405 included) and the per-address rate limit. Routes added to the
    /// returned router later get the same middleware.
    ///
    /// Every request is counted and timed with swift-metrics (Hummingbird's
    /// `MetricsMiddleware`, outermost, so it sees the final status of
    /// refusals too), as are stored and duplicate replies, registrations and
    /// 429s (``AppServerMetrics``). `metrics` renders the process's metrics as
    /// Prometheus text for `GET /metrics`; nil: no such route (404).
    public static func router(
        intake: ReplyIntake, app: AppEndpoints? = nil, limits: AppServerLimits = .init(), rateLimits: RateLimits? = nil,
        metrics: (@Sendable () -> String)? = nil
    ) -> Router<AppRequestContext> {
        let rates = rateLimits ?? RateLimits(limits)
        let router = Router(context: AppRequestContext.self)
        router.add(middleware: MetricsMiddleware())
        router.add(middleware: ErrorMiddleware(logger: intake.logger))
        router.add(middleware: AddressRateLimitMiddleware(
            limits: rates, addresses: ClientAddress(trustedProxies: limits.trustedProxies)))

        router.post("/v1/replies") { request, _ -> Response in
            let bytes = try await jsonBody(request, upTo: ReplyRules.maxBodyBytes)
            var admitted: String?
            let outcome: Result<ReplyIntake.Stored, ReplyError>
            do {
                outcome = try await intake.submit(bytes.readableBytesView) { delivery throws(AppServerError) in
                    let key = "delivery:\(delivery)"
                    try rates.check(rates.perDelivery, key: key, what: "for this delivery")
                    admitted = key
                }
            } catch {
                // Not stored for the server's own reason (its database out of reach, its queue
                // full: 503): the app's retry is not a replay, so it keeps its allowance.
                if let admitted { rates.perDelivery.refund(admitted) }
                throw error
            }
            switch outcome {
            case .success(.stored):
                return json(Array(#"{"status":"stored"}"#.utf8), status: .accepted)
            case .success(.duplicate):
                return json(Array(#"{"status":"duplicate"}"#.utf8), status: .ok)
            case .failure(let error):
                throw AppServerError(error)
            }
        }
        let receipts = ReceiptEndpoint(store: ReceiptStore(client: intake.store.client, logger: intake.logger),
                                       keys: intake.keys)
        router.post("/v1/receipts") { request, _ -> Response in
            let bytes = try await jsonBody(request, upTo: ReceiptRules.maxBodyBytes)
            return json(try await receipts.submit(bytes.readableBytesView), status: .ok)
        }
        (app ?? AppEndpoints(client: intake.store.client, keys: AppKeys(), logger: intake.logger)).add(to: router, rates: rates)
        router.get("/healthz") { _, _ -> Response in
            json(Array(#"{"status":"ok"}"#.utf8), status: .ok)
        }
        router.get("/v1/openapi.json") { _, _ -> Response in
            json(OpenAPIDocument.bytes, status: .ok)
        }
        if let metrics {
            router.get("/metrics") { _, _ -> Response in
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                headers[.cacheControl] = "no-store"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: metrics())))
            }
        }
        return router
    }

    /// A JSON request's body, at most `limit` bytes: 415 for another
    /// content type, 413 beyond the limit.
    static func jsonBody(_ request: Request, upTo limit: Int) async throws -> ByteBuffer {
        guard isJSON(request.headers[.contentType]) else { throw AppServerError.unsupportedMediaType }
        var request = request
        do {
            return try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw AppServerError.bodyTooLarge
        } catch {
            // The client broke the framing (a body shorter than its
            // Content-Length, a bad chunk): its fault, not ours.
            throw AppServerError.incompleteBody
        }
    }

    /// `application/json`, alone or with `charset=utf-8` (any case).
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        // What every client sends, without splitting and lowercasing (the
        // general parse below is costly at the intake's rate).
        if contentType == "application/json" { return true }
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard parts.first == "application/json" else { return false }
        return parts.dropFirst().allSatisfy { $0 == "charset=utf-8" || $0 == "charset=\"utf-8\"" }
    }

    static func json(_ bytes: [UInt8], status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The HTTP/1.1 server settings that bound each connection (`limits`).
    public static func serverBuilder(limits: AppServerLimits) -> HTTPServerBuilder {
        let header = limits.headerTimeout
        let body = limits.bodyTimeout
        let counter = ConnectionCounter(limit: limits.maxConnectionsPerAddress, exempt: limits.trustedProxies)
        return .http1(configuration: .init(
            additionalChannelHandlers: [ConnectionGuard(headerTimeout: header, bodyTimeout: body, counter: counter)],
            idleTimeout: nil,
            httpDecoderConfiguration: .init(maxHeaderFieldSize: limits.maxHeaderBytes, maxHeaderListSize: limits.maxHeaderBytes,
                                            maxHeaderFieldCount: 100)))
    }

    /// The application on `host:port`; `onRunning` learns the bound port (0
    /// picks a free one). It is a ServiceLifecycle `Service`: run it in the
    /// command's `ServiceGroup`, which stops it gracefully on SIGTERM.
    public static func application(
        intake: ReplyIntake, app: AppEndpoints? = nil, host: String, port: Int, limits: AppServerLimits = .init(), logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }, metrics: (@Sendable () -> String)? = nil
    ) -> some ApplicationProtocol {
        Application(
            router: router(intake: intake, app: app, limits: limits, metrics: metrics),
            server: serverBuilder(limits: limits),
            configuration: .init(address: .hostname(host, port: port), serverName: "herald",
                                 availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections, logger: logger)),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger)
    }
}
