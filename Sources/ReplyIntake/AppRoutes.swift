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
    /// nil: no app JWT key configured; registration answers 503.
    public let verifier: AppTokenVerifier?
    public let logger: Logger

    public init(client: PostgresClient, verifier: AppTokenVerifier?, logger: Logger) {
        self.devices = DeviceStore(client: client, logger: logger)
        self.config = ConfigStore(client: client, logger: logger)
        self.verifier = verifier
        self.logger = logger
    }

    /// Adds `PUT`/`DELETE /v1/devices/{token}` and `GET /v1/notification-config`;
    /// `rates` limits registrations per device token (429 with `Retry-After`).
    public func add<Context: RequestContext>(to router: Router<Context>, rates: RateLimits? = nil) {
        router.put("/v1/devices/:token") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            if let rates { try rates.check(rates.perDevice, key: "device:\(token.lowercased())", what: "for this device") }
            let result = await register(request, token: token)
            return Self.answer(result)
        }
        router.delete("/v1/devices/:token") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            if let rates { try rates.check(rates.perDevice, key: "device:\(token.lowercased())", what: "for this device") }
            let result = await unregister(request, token: token)
            return Self.answer(result)
        }
        router.get("/v1/notification-config") { request, _ -> Response in
            try await notificationConfig(request)
        }
    }

    static func answer(_ result: Result<(Int, [UInt8]), AppAPIError>) -> Response {
        switch result {
        case .success(let (status, body)):
            if body.isEmpty { return Response(status: .init(code: status)) }
            return json(body, status: status)
        case .failure(let error):
            var response = json(error.json, status: error.status)
            if error.status == 401 { response.headers[.wwwAuthenticate] = "Bearer realm=\"herald\"" }
            return response
        }
    }

    static func json(_ bytes: [UInt8], status: Int) -> Response {
        Response(status: .init(code: status), headers: [.contentType: "application/json"],
                 body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    private func authenticate(_ request: Request) async -> Result<AppRegistrationClaims, AppAPIError> {
        guard let verifier else {
            return .failure(AppAPIError(status: 503, code: "registration_disabled",
                                        message: "device registration is not configured: set HERALD_APP_JWT_PUBLIC_KEY"))
        }
        switch await verifier.verify(authorization: request.headers[.authorization]) {
        case .success(let claims): return .success(claims)
        case .failure(let error): return .failure(.unauthorized(error.message))
        }
    }

    /// `PUT /v1/devices/{token}`: 201 new, 200 updated.
    func register(_ request: Request, token rawToken: String) async -> Result<(Int, [UInt8]), AppAPIError> {
        let claims: AppRegistrationClaims
        switch await authenticate(request) {
        case .success(let c): claims = c
        case .failure(let e): return .failure(e)
        }
        var request = request
        let registration: DeviceRegistration
        do throws(AppAPIError) {
            let token = try DeviceRegistrationRules.token(rawToken)
            let bytes: ByteBuffer
            do {
                bytes = try await request.collectBody(upTo: DeviceRegistrationRules.maxBodyBytes)
            } catch {
                throw AppAPIError.tooLarge
            }
            registration = try DeviceRegistrationRules.decode(bytes.readableBytesView, token: token)
        } catch {
            return .failure(error)
        }
        guard registration.user == claims.sub.value else {
            return .failure(AppAPIError(status: 403, code: "user_mismatch",
                                        message: "the token's sub is not the body's \"user\": a backend token registers devices of its own user only"))
        }
        do {
            switch try await devices.register(registration, issuedAt: claims.iat.value) {
            case .invalidatedAfter(let since):
                return .failure(AppAPIError(
                    status: 409, code: "token_invalidated",
                    message: "APNs declared this device token invalid at \(Self.iso(since)), after this registration's token was issued; register again with a token issued now"))
            case .stored(_, let created, let movedFrom):
                if movedFrom != nil {
                    logger.info("device token moved to another user")
                }
                var w = JSONWriter(capacity: 128)
                w.raw("{\"device\":")
                w.string(registration.token)
                w.raw(",\"status\":")
                w.string(created ? "created" : "updated")
                w.raw("}")
                return .success((created ? 201 : 200, w.bytes))
            }
        } catch where StoreError.sqlState(of: error) == "23514" {
            // A CHECK of the schema (e.g. a time zone PostgreSQL does not know).
            return .failure(.invalid("invalid_registration", StoreError.describe(error)))
        } catch {
            logger.error("device registration failed", metadata: ["error": "\(StoreError.describe(error))"])
            return .failure(AppAPIError(status: 503, code: "unavailable", message: "the registration could not be stored; retry later"))
        }
    }

    /// `DELETE /v1/devices/{token}`: 204 (also when already unregistered).
    func unregister(_ request: Request, token rawToken: String) async -> Result<(Int, [UInt8]), AppAPIError> {
        let claims: AppRegistrationClaims
        switch await authenticate(request) {
        case .success(let c): claims = c
        case .failure(let e): return .failure(e)
        }
        let token: String
        do throws(AppAPIError) {
            token = try DeviceRegistrationRules.token(rawToken)
        } catch {
            return .failure(error)
        }
        do {
            switch try await devices.unregister(token: token, user: claims.sub.value) {
            case .unregistered: return .success((204, []))
            case .unknownDevice: return .failure(AppAPIError(status: 404, code: "unknown_device", message: "no such device token"))
            case .otherUser:
                return .failure(AppAPIError(status: 403, code: "user_mismatch",
                                            message: "this device token is registered to another user"))
            }
        } catch {
            logger.error("device unregistration failed", metadata: ["error": "\(StoreError.describe(error))"])
            return .failure(AppAPIError(status: 503, code: "unavailable", message: "the request could not be stored; retry later"))
        }
    }

    /// `GET /v1/notification-config[?locale=]`: the document in the locale
    /// asked for (`?locale=`, else the first of `Accept-Language`), with an
    /// ETag per document; `If-None-Match` answers 304.
    func notificationConfig(_ request: Request) async throws -> Response {
        let locale = Self.requestedLocale(query: request.uri.queryParameters.get("locale"),
                                          acceptLanguage: request.headers[.acceptLanguage])
        let document = try await config.catalogue().document(for: locale)
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
