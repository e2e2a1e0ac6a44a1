import Foundation
import HeraldCore
import Hummingbird
import NIOCore
import Store

/// What an app registers for Live Activity sales (DESIGN, contract 10): each device's
/// push-to-start token, and each running activity's update token or channel, with the step it
/// shows. Decoding is pure, so every refusal is tested without a server.
public enum ActivityRegistrationRules {
    public static let maxBodyBytes = 1024
    public static let attributesType = LiveActivitySale.attributesType

    public struct Activity: Sendable, Hashable {
        public var updateToken: String?
        public var channel: String?
        public var startedBy: String
        public var step: Int?
    }

    static func object(_ bytes: some Collection<UInt8>) throws(AppServerError) -> [String: JSONValue] {
        guard bytes.count <= maxBodyBytes else { throw .bodyTooLarge }
        let document: JSONValue
        do {
            document = try StrictJSON.parse(bytes, limits: .init(maxDepth: 2))
        } catch {
            throw .malformed("the body is not valid JSON: \(error.description)")
        }
        guard case .object(let fields) = document else { throw .malformed("the body is not a JSON object") }
        return fields
    }

    static func hexToken(_ value: JSONValue?, field: String) throws(AppServerError) -> String {
        guard let text = value?.stringValue else { throw .malformed("\"\(field)\" must be a text of hex digits") }
        let lower = text.lowercased()
        guard (64...200).contains(lower.utf8.count),
              lower.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .invalid("bad_token", "\"\(field)\" must be the token ActivityKit gave, as 64 (up to 200) hex digits")
        }
        return lower
    }

    /// `{"token": "<hex>"}`: a push-to-start token.
    public static func pushToStart(_ bytes: some Collection<UInt8>) throws(AppServerError) -> String {
        let fields = try object(bytes)
        if let unknown = fields.keys.sorted().first(where: { $0 != "token" }) {
            throw .malformed("unknown field \(StrictJSON.quote(unknown, max: 64)); the body is {\"token\": \"<hex>\"}")
        }
        return try hexToken(fields["token"], field: "token")
    }

    /// `{"token": "<hex>"}` or `{"channel": "<base64>"}`, `"started_by": "push" | "app"`, `"step"`.
    public static func activity(_ bytes: some Collection<UInt8>) throws(AppServerError) -> Activity {
        let fields = try object(bytes)
        let known: Set<String> = ["token", "channel", "started_by", "step"]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw .malformed("unknown field \(StrictJSON.quote(unknown, max: 64)); use token or channel, started_by and step")
        }
        guard (fields["token"] == nil) != (fields["channel"] == nil) else {
            throw .malformed("give the activity's update \"token\" or the \"channel\" it listens on, not both")
        }
        var activity = Activity(updateToken: nil, channel: nil, startedBy: "", step: nil)
        if fields["token"] != nil { activity.updateToken = try hexToken(fields["token"], field: "token") }
        if let value = fields["channel"] {
            guard let channel = value.stringValue else { throw .malformed("\"channel\" must be a text") }
            // Padded base64 of any size, as APNs makes them (Apple states no size): the document's pattern.
            guard ChannelID.isUsable(channel) else {
                throw .invalid("bad_channel", "\"channel\" must be the channel id as APNs made it (base64)")
            }
            activity.channel = channel
        }
        guard let startedBy = fields["started_by"]?.stringValue, startedBy == "push" || startedBy == "app" else {
            throw .invalid("bad_started_by", "\"started_by\" must be \"push\" (push-to-start) or \"app\" (Activity.request)")
        }
        activity.startedBy = startedBy
        switch fields["step"] {
        case nil, .null?: break
        case .int(let n)? where (0...10_000).contains(n): activity.step = Int(n)
        default: throw .invalid("bad_step", "\"step\" must be the content state's step the device shows (0 or more)")
        }
        return activity
    }

    /// A campaign id in a path.
    public static func campaign(_ text: String) throws(AppServerError) -> Int64 {
        guard let id = Int64(text), id > 0 else {
            throw AppServerError(status: .notFound, code: "unknown_campaign", message: "the path names no campaign id")
        }
        return id
    }
}

extension AppServerError {
    static let unknownSale = AppServerError(status: .notFound, code: "unknown_campaign",
                                         message: "no Live Activity sale has this campaign id")
    static let unknownActivity = AppServerError(status: .notFound, code: "unknown_activity",
                                             message: "this device registered no activity of this sale")
}

extension AppEndpoints {
    /// `PUT /v1/devices/{token}/push-to-start/HeraldSaleAttributes`, `PUT` and `DELETE
    /// /v1/devices/{token}/activities/{campaign}`.
    func addActivityRoutes<Context: RequestContext>(to router: Router<Context>, rates: RateLimits?) {
        router.put("/v1/devices/:token/push-to-start/:type") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            if let rates { try rates.check(rates.perDevice, key: "device:\(token.lowercased())", what: "for this device") }
            let (status, body) = try await registerPushToStart(request, token: token, type: context.parameters.get("type") ?? "")
            return Self.json(body, status: status)
        }
        router.put("/v1/devices/:token/widgets") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            if let rates { try rates.check(rates.perDevice, key: "device:\(token.lowercased())", what: "for this device") }
            let (status, body) = try await registerWidgetToken(request, token: token)
            return Self.json(body, status: status)
        }
        router.put("/v1/devices/:token/activities/:campaign") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            if let rates { try rates.check(rates.perDevice, key: "device:\(token.lowercased())", what: "for this device") }
            let (status, body) = try await registerActivity(request, token: token, campaign: context.parameters.get("campaign") ?? "")
            return Self.json(body, status: status)
        }
        router.delete("/v1/devices/:token/activities/:campaign") { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            if let rates { try rates.check(rates.perDevice, key: "device:\(token.lowercased())", what: "for this device") }
            try await endActivity(request, token: token, campaign: context.parameters.get("campaign") ?? "")
            return Response(status: .noContent)
        }
    }

    /// The store's answer; a database fault is logged (never the body) and answered as not stored.
    private func stored<T: Sendable>(_ what: String, notStored: String, _ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch {
            logger.error("\(what) failed", metadata: ["error": "\(ErrorText.describe(error))"])
            throw AppServerError.notStored(notStored)
        }
    }

    private static func stored(_ outcome: LiveActivityStore.Registered) throws(AppServerError) -> (HTTPResponse.Status, [UInt8]) {
        switch outcome {
        case .stored(let created):
            return (created ? .created : .ok, Array("{\"status\":\"\(created ? "created" : "updated")\"}".utf8))
        case .unknownDevice: throw .unknownDevice
        case .unknownCampaign: throw .unknownSale
        }
    }

    func registerPushToStart(_ request: Request, token rawToken: String, type: String) async throws -> (HTTPResponse.Status, [UInt8]) {
        let (app, claims) = try await authenticate(request)
        let token = try DeviceRegistrationRules.token(rawToken)
        guard type == ActivityRegistrationRules.attributesType else {
            throw AppServerError(status: .notFound, code: "unknown_attributes_type",
                              message: "Herald's sales start activities of HeraldSaleAttributes only")
        }
        let bytes = try await AppHTTPServer.jsonBody(request, upTo: ActivityRegistrationRules.maxBodyBytes)
        let pushToStart = try ActivityRegistrationRules.pushToStart(bytes.readableBytesView)
        let outcome = try await stored("push-to-start registration", notStored: "the registration") {
            try await liveActivities.registerPushToStart(device: token, user: claims.sub.value, app: app, pushToStart: pushToStart)
        }
        return try Self.stored(outcome)
    }

    /// `PUT /v1/devices/{token}/widgets`: the token `WidgetPushHandler` gave (iOS 26).
    func registerWidgetToken(_ request: Request, token rawToken: String) async throws -> (HTTPResponse.Status, [UInt8]) {
        let (app, claims) = try await authenticate(request)
        let token = try DeviceRegistrationRules.token(rawToken)
        let bytes = try await AppHTTPServer.jsonBody(request, upTo: ActivityRegistrationRules.maxBodyBytes)
        let widgetToken = try ActivityRegistrationRules.pushToStart(bytes.readableBytesView)
        let outcome = try await stored("widget token registration", notStored: "the registration") {
            try await widgets.register(device: token, user: claims.sub.value, app: app, widgetToken: widgetToken)
        }
        switch outcome {
        case .stored(let created): return try Self.stored(.stored(created: created))
        case .unknownDevice: throw AppServerError.unknownDevice
        }
    }

    func registerActivity(_ request: Request, token rawToken: String, campaign rawCampaign: String) async throws -> (HTTPResponse.Status, [UInt8]) {
        let (app, claims) = try await authenticate(request)
        let token = try DeviceRegistrationRules.token(rawToken)
        let campaign = try ActivityRegistrationRules.campaign(rawCampaign)
        let bytes = try await AppHTTPServer.jsonBody(request, upTo: ActivityRegistrationRules.maxBodyBytes)
        let activity = try ActivityRegistrationRules.activity(bytes.readableBytesView)
        let outcome = try await stored("activity registration", notStored: "the registration") {
            try await liveActivities.registerActivity(
                device: token, user: claims.sub.value, app: app, campaign: campaign, updateToken: activity.updateToken,
                channel: activity.channel, startedBy: activity.startedBy, step: activity.step)
        }
        return try Self.stored(outcome)
    }

    func endActivity(_ request: Request, token rawToken: String, campaign rawCampaign: String) async throws {
        let (app, claims) = try await authenticate(request)
        let token = try DeviceRegistrationRules.token(rawToken)
        let campaign = try ActivityRegistrationRules.campaign(rawCampaign)
        let outcome = try await stored("activity end", notStored: "the request") {
            try await liveActivities.endActivity(device: token, user: claims.sub.value, app: app, campaign: campaign)
        }
        switch outcome {
        case .ended: return
        case .unknownDevice: throw AppServerError.unknownDevice
        case .unknownActivity: throw AppServerError.unknownActivity
        }
    }
}
