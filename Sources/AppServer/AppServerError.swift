import HeraldCore
import Hummingbird
import NIOCore

/// An HTTP answer that is not a success: the status, and the JSON body
/// `{"error": code, "message": text}` every endpoint uses. This is where a
/// domain refusal (`ReplyError`) gets its HTTP status; nothing below the HTTP
/// module knows about statuses.
public struct AppServerError: HTTPResponseError, CustomStringConvertible {
    public let status: HTTPResponse.Status
    public let code: String
    public let message: String
    /// Extra headers (`Retry-After`, `Allow`).
    public var headers: HTTPFields

    public init(status: HTTPResponse.Status, code: String, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    /// A refused reply with the status of its code (docs/DESIGN.md, contract 4).
    public init(_ error: ReplyError) {
        self.init(status: Self.status(of: error.code), code: error.code, message: error.message)
    }

    /// The status each reply refusal is answered with.
    public static func status(of code: String) -> HTTPResponse.Status {
        switch code {
        case "malformed_json": .badRequest
        case "bad_token": .unauthorized
        case "unknown_delivery": .notFound
        case "body_too_large": .contentTooLarge
        default: .unprocessableContent
        }
    }

    public static func notFound(_ path: String) -> Self {
        Self(status: .notFound, code: "not_found", message: "no endpoint at \(StrictJSON.quote(path, max: 80))")
    }

    public static func methodNotAllowed(_ method: HTTPRequest.Method, allowed: [HTTPRequest.Method]) -> Self {
        var headers = HTTPFields()
        headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
        return Self(status: .methodNotAllowed, code: "method_not_allowed",
                    message: "\(StrictJSON.quote(method.rawValue, max: 20)) is not allowed here; use \(allowed.map(\.rawValue).joined(separator: " or "))",
                    headers: headers)
    }

    public static let unsupportedMediaType = Self(
        status: .unsupportedMediaType, code: "unsupported_media_type",
        message: "the body must be sent as Content-Type: application/json (UTF-8)")

    public static let bodyTooLarge = Self(ReplyError.tooLarge)

    public static let incompleteBody = Self(status: .badRequest, code: "malformed_http",
                                            message: "the body ended before its announced length, or its chunks are malformed")

    public static func rateLimited(_ what: String, retryAfter seconds: Int) -> Self {
        var headers = HTTPFields()
        headers[.retryAfter] = "\(seconds)"
        return Self(status: .tooManyRequests, code: "rate_limited",
                    message: "too many requests \(what); retry after \(seconds) s", headers: headers)
    }

    public static let unavailable: Self = {
        var headers = HTTPFields()
        headers[.retryAfter] = "5"
        return Self(status: .serviceUnavailable, code: "unavailable",
                    message: "the service cannot reach its database; retry later", headers: headers)
    }()

    /// More replies are waiting to be stored than the server queues
    /// (`ReplyBatching.maxQueued`): retry in a moment.
    public static let busy: Self = {
        var headers = HTTPFields()
        headers[.retryAfter] = "1"
        return Self(status: .serviceUnavailable, code: "unavailable",
                    message: "the service is busy storing other replies; retry later", headers: headers)
    }()

    public static let internalError = Self(status: .internalServerError, code: "internal_error",
                                           message: "the server failed to answer; this is logged")

    /// The JSON body.
    public var body: [UInt8] {
        var w = JSONWriter(capacity: 96 + message.utf8.count)
        w.raw("{\"error\":")
        w.string(code)
        w.raw(",\"message\":")
        w.string(message)
        w.raw("}")
        return w.bytes
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }

    public var response: Response {
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
