import Foundation
import HeraldCore
import Hummingbird
import Logging
import NIOCore
import PostgresNIO
import Store

/// What the app itself talks to: device registration (contract 6) and the
/// localized notification config (contract 5).
public struct AppEndpoints: Sendable {
    public let devices: DeviceStore
    public let config: ConfigStore
    public let conversions: ConversionStore
    public let liveActivities: LiveActivityStore
    public let widgets: WidgetStore
    /// Each app's registration keys; an app without any: registration answers 503.
    public let keys: AppKeys
    public let logger: Logger

    public init(client: Database, keys: AppKeys, logger: Logger) {
        self.devices = DeviceStore(client: client, logger: logger)
        self.config = ConfigStore(client: client, logger: logger)
        self.conversions = ConversionStore(client: client, logger: logger)
        self.liveActivities = LiveActivityStore(client: client, logger: logger)
        self.widgets = WidgetStore(client: client, logger: logger)
        self.keys = keys
        self.logger = logger
    }

    /// The app `default` alone, with `verifier` (nil: registration answers 503).
    public init(client: Database, verifier: AppTokenVerifier?, logger: Logger) {
        self.init(client: client, keys: AppKeys(default: verifier), logger: logger)
    }

    /// Adds `PUT`/`DELETE /v1/devices/{token}` and `GET /v1/notification-config`;
    /// `rates` limits registrations per device token (429 with `Retry-After`).
    /// Every refusal is an ``AppServerError`` (the `{error, message}` JSON).
    public func add<Context: RequestContext>(to router: Router<Context>, rates: RateLimits? = nil) {
        router.put("/v1/devices/:token") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            if let rates { try rates.check(rates.perDevice, key: "device:\(token.lowercased())", what: "for this device") }
            let (status, body) = try await register(request, token: token)
            return Self.json(body, status: status)
        }
        router.delete("/v1/devices/:token") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            if let rates { try rates.check(rates.perDevice, key: "device:\(token.lowercased())", what: "for this device") }
            try await unregister(request, token: token)
            return Response(status: .noContent)
        }
        router.get("/v1/notification-config") { request, _ -> Response in
            try await notificationConfig(request)
        }
        router.post("/v1/conversions") { request, _ -> Response in
            let (status, body) = try await conversion(request)
            return Self.json(body, status: status)
        }
        addActivityRoutes(to: router, rates: rates)
    }

    /// `POST /v1/conversions`: 201 stored, 200 its idempotency key was
    /// stored before. Authenticated as a registration is: the backend's
    /// token names the user the conversion is of.
    func conversion(_ request: Request) async throws -> (HTTPResponse.Status, [UInt8]) {
        let claims = try await authenticate(request).claims
        let bytes = try await AppHTTPServer.jsonBody(request, upTo: ConversionRules.maxBodyBytes)
        let conversion: Conversion
        do throws(ReplyError) {
            conversion = try ConversionRules.decode(bytes.readableBytesView)
        } catch {
            throw AppServerError(error)
        }
        guard conversion.user == claims.sub.value else {
            throw AppServerError.userMismatch("the token's sub is not the body's \"user\": a backend token reports its own user's conversions only")
        }
        let outcome: ConversionStore.Outcome
        do {
            outcome = try await conversions.store([conversion], source: "api").first ?? .duplicate
        } catch where ReplyIntake.isRefusal(error) {
            throw AppServerError.invalid("invalid_conversion", ErrorText.describe(error))
        }
        switch outcome {
        case .stored: return (.created, Array(#"{"status":"stored"}"#.utf8))
        case .duplicate: return (.ok, Array(#"{"status":"duplicate"}"#.utf8))
        case .unknownUser:
            throw AppServerError(status: .notFound, code: "unknown_user",
                              message: "no user with this external id is registered")
        }
    }

    static func json(_ bytes: [UInt8], status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The app the bearer token is for, and its claims, verified with that app's keys.
    func authenticate(_ request: Request) async throws(AppServerError) -> (app: String, claims: AppRegistrationClaims) {
        if keys.apps.isEmpty { throw .registrationDisabled }
        switch await keys.verify(authorization: request.headers[.authorization]) {
        case .success(let verified): return verified
        case .failure(let error): throw .unauthorized(error.message)
        }
    }

    /// `PUT /v1/devices/{token}`: 201 new, 200 updated. The token is checked
    /// first, then the content type (415), the body's size (413), its JSON (400)
    /// and its values (422).
    func register(_ request: Request, token rawToken: String) async throws -> (HTTPResponse.Status, [UInt8]) {
        let (app, claims) = try await authenticate(request)
        let token = try DeviceRegistrationRules.token(rawToken)
        guard AppHTTPServer.isJSON(request.headers[.contentType]) else { throw AppServerError.unsupportedMediaType }
        var request = request
        let bytes: ByteBuffer
        do {
            bytes = try await request.collectBody(upTo: DeviceRegistrationRules.maxBodyBytes)
        } catch is NIOTooManyBytesError {
            throw AppServerError.bodyTooLarge
        } catch {
            throw AppServerError.incompleteBody
        }
        var registration = try DeviceRegistrationRules.decode(bytes.readableBytesView, token: token)
        registration.app = app
        guard registration.user == claims.sub.value else {
            throw AppServerError.userMismatch("the token's sub is not the body's \"user\": a backend token registers devices of its own user only")
        }
        let outcome: DeviceStore.Registered
        do {
            outcome = try await devices.register(registration, issuedAt: claims.iat.value)
        } catch where ReplyIntake.isRefusal(error) {
            // A CHECK of the schema (e.g. a time zone PostgreSQL does not know)
            // or a value it cannot hold: the request's fault.
            throw AppServerError.invalid("invalid_registration", ErrorText.describe(error))
        } catch {
            logger.error("device registration failed", metadata: ["error": "\(ErrorText.describe(error))"])
            throw AppServerError.notStored("the registration")
        }
        switch outcome {
        case .invalidatedAfter(let since):
            throw AppServerError(
                status: .conflict, code: "token_invalidated",
                message: "APNs declared this device token invalid at \(Self.iso(since)), after this registration's token was issued; register again with a token issued now")
        case .otherApp(let other):
            throw AppServerError(
                status: .conflict, code: "token_of_another_app",
                message: "this device token is registered by app \"\(other)\"; a backend registers its own app's devices (the token's aud names the app)")
        case .stored(_, let created, let movedFrom):
            AppServerMetrics.deviceRegistered()
            if movedFrom != nil {
                logger.info("device token moved to another user")
            }
            var w = JSONWriter(capacity: 128)
            w.raw("{\"device\":")
            w.string(registration.token)
            w.raw(",\"status\":")
            w.string(created ? "created" : "updated")
            w.raw("}")
            return (created ? .created : .ok, w.bytes)
        }
    }

    /// `DELETE /v1/devices/{token}`: 204 (also when already unregistered).
    func unregister(_ request: Request, token rawToken: String) async throws {
        let (app, claims) = try await authenticate(request)
        let token = try DeviceRegistrationRules.token(rawToken)
        let outcome: DeviceStore.Unregistered
        do {
            outcome = try await devices.unregister(token: token, user: claims.sub.value, app: app)
        } catch {
            logger.error("device unregistration failed", metadata: ["error": "\(ErrorText.describe(error))"])
            throw AppServerError.notStored("the request")
        }
        switch outcome {
        case .unregistered: return
        case .unknownDevice: throw AppServerError.unknownDevice
        case .otherUser: throw AppServerError.userMismatch("this device token is registered to another user")
        }
    }

    /// `GET /v1/notification-config[?app=][&locale=]`: the document of the
    /// app (`?app=`, else `default`) in the locale asked for (`?locale=`,
    /// else the first of `Accept-Language`), with an ETag per document;
    /// `If-None-Match` answers 304.
    func notificationConfig(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let locale = Self.requestedLocale(query: query.get("locale"), acceptLanguage: request.headers[.acceptLanguage])
        let app = query.get("app") ?? AppRecord.defaultName
        let catalogue = try await config.catalogue()
        guard catalogue.apps.contains(app) else {
            throw AppServerError.unknownApp(app)
        }
        let document = catalogue.document(for: locale, app: app)
        var headers = HTTPFields()
        headers[.eTag] = document.etag
        headers[.cacheControl] = "no-cache"
        headers[.vary] = "Accept-Language"
        if let match = request.headers[.ifNoneMatch],
           match.split(separator: ",").contains(where: {
               let tag = $0.trimmingCharacters(in: .whitespaces)
               return tag == document.etag || tag == "W/" + document.etag || tag == "*"
           }) {
            return Response(status: .notModified, headers: headers)
        }
        try await config.record([(locale, document)])
        headers[.contentType] = "application/json"
        headers[.contentLanguage] = locale
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: document.body)))
    }

    /// `?locale=` wins; else the `Accept-Language` tag of highest weight; else `en`.
    static func requestedLocale(query: String?, acceptLanguage: String?) -> String {
        if let query, LocaleMatch.isTag(query) { return query }
        var best: (tag: String, q: Double)?
        for item in (acceptLanguage ?? "").split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let tag = parts.first, LocaleMatch.isTag(tag) else { continue }
            var q = 1.0
            for p in parts.dropFirst() where p.hasPrefix("q=") { q = Double(p.dropFirst(2)) ?? 0 }
            if q > 0, best == nil || q > best?.q ?? 0 { best = (tag, q) }
        }
        return best?.tag ?? "en"
    }

    static func iso(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: date)
    }
}
