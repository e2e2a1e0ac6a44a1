import ExtensionKit
import Foundation

/// A refused reply (DESIGN, contract 4): an HTTP status, a stable code and a
/// message for the app developer. The message never holds the token or text.
public struct ReplyError: Error, Hashable, CustomStringConvertible {
    public let status: Int
    public let code: String
    public let message: String

    public var description: String { "\(code): \(message)" }

    public static func malformed(_ message: String) -> Self { Self(status: 400, code: "malformed_json", message: message) }
    public static let badToken = Self(status: 401, code: "bad_token", message: "the reply token does not belong to this delivery")
    public static let unknownDelivery = Self(status: 404, code: "unknown_delivery", message: "no such delivery")
    public static func actionNotAllowed(_ action: String, category: String?) -> Self {
        Self(status: 422, code: "action_not_allowed",
             message: "action \"\(action.prefix(64))\" is not an action of the campaign's category \(category.map { "\"\($0)\"" } ?? "(none)")")
    }
    public static let textNotAllowed = Self(status: 422, code: "text_not_allowed",
                                            message: "text is only accepted for a text-input action")
    public static let textTooLong = Self(status: 422, code: "text_too_long",
                                         message: "text is longer than \(ReplyRules.maxTextCharacters) characters")
    public static let textInvalid = Self(status: 422, code: "text_invalid",
                                         message: "text must not contain NUL characters")
    public static let tooLarge = Self(status: 413, code: "body_too_large",
                                      message: "the body is larger than \(ReplyRules.maxBodyBytes) bytes")
}

/// An action a category offers, as far as replies care.
public struct CategoryAction: Sendable, Hashable {
    public var id: String
    public var takesText: Bool

    public init(id: String, takesText: Bool) {
        self.id = id
        self.takesText = takesText
    }
}

/// The delivery a reply answers, as stored.
public struct ReplyTarget: Sendable, Hashable {
    public var deliveryID: Int64
    public var campaignID: Int64
    public var deviceID: Int64
    public var userID: Int64
    public var categoryID: String?

    public init(deliveryID: Int64, campaignID: Int64, deviceID: Int64, userID: Int64, categoryID: String?) {
        self.deliveryID = deliveryID
        self.campaignID = campaignID
        self.deviceID = deviceID
        self.userID = userID
        self.categoryID = categoryID
    }
}

/// The checks of contract 4, shared by `POST /v1/replies` and `herald ingest`.
public enum ReplyRules {
    public static let maxTextCharacters = 2000
    public static let maxBodyBytes = 16 * 1024

    /// Parses one reply; a field of the wrong type, a missing field or bad
    /// JSON is `400 malformed_json` naming the field.
    public static func decode(_ bytes: some DataProtocol) throws(ReplyError) -> ReplyBody {
        let data = Data(bytes)
        guard data.count <= maxBodyBytes else { throw .tooLarge }
        do {
            return try JSONDecoder().decode(ReplyBody.self, from: data)
        } catch let DecodingError.keyNotFound(key, _) {
            throw .malformed("\"\(key.stringValue)\" is missing")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw .malformed("\"\(field)\" has the wrong type")
        } catch let DecodingError.dataCorrupted(context) {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw .malformed(field.isEmpty ? "the body is not a JSON object" : "\"\(field)\" is not valid: \(context.debugDescription)")
        } catch {
            throw .malformed("the body is not valid JSON")
        }
    }

    /// The token check, before anything is looked up (constant time).
    public static func checkToken(_ body: ReplyBody, tokens: ReplyTokens) throws(ReplyError) {
        guard tokens.verify(body.token, delivery: body.delivery) else { throw .badToken }
    }

    /// The checks that need the delivery and its category's actions.
    public static func check(_ body: ReplyBody, target: ReplyTarget?, actions: [CategoryAction]) throws(ReplyError) {
        guard let target else { throw .unknownDelivery }
        let takesText: Bool
        if body.action == ReplyAction.defaultActionIdentifier || body.action == ReplyAction.dismissActionIdentifier {
            takesText = false
        } else if let action = actions.first(where: { $0.id == body.action }) {
            takesText = action.takesText
        } else {
            throw .actionNotAllowed(body.action, category: target.categoryID)
        }
        if let text = body.text {
            guard takesText else { throw .textNotAllowed }
            guard text.count <= maxTextCharacters else { throw .textTooLong }
            guard !text.utf8.contains(0) else { throw .textInvalid }
        }
    }

    /// The JSON error body: `{"error": code, "message": text}`.
    public static func errorJSON(_ error: ReplyError) -> [UInt8] {
        var w = JSONWriter(capacity: 160)
        w.raw("{\"error\":")
        w.string(error.code)
        w.raw(",\"message\":")
        w.string(error.message)
        w.raw("}")
        return w.bytes
    }
}

/// Contract 5: the categories and actions the app registers, as the JSON
/// document `GET /v1/notification-config` serves. Keys are written sorted, so
/// the same rows always give the same bytes (and the same ETag).
public enum NotificationConfig {
    public struct Action: Sendable, Hashable {
        public var id: String
        public var title: String
        public var options: Int
        public var textButtonTitle: String?
        public var textPlaceholder: String?

        public init(id: String, title: String, options: Int, textButtonTitle: String? = nil, textPlaceholder: String? = nil) {
            self.id = id
            self.title = title
            self.options = options
            self.textButtonTitle = textButtonTitle
            self.textPlaceholder = textPlaceholder
        }
    }

    public struct Category: Sendable, Hashable {
        public var id: String
        public var actions: [String]
        public var options: Int

        public init(id: String, actions: [String], options: Int) {
            self.id = id
            self.actions = actions
            self.options = options
        }
    }

    public static func render(categories: [Category], actions: [Action]) -> [UInt8] {
        var w = JSONWriter(capacity: 1024)
        w.raw("{\"NotificationConfig\":{\"UNNotificationAction\":{")
        for (i, a) in actions.sorted(by: { $0.id < $1.id }).enumerated() {
            if i > 0 { w.raw(",") }
            w.key(a.id)
            w.raw("{\"identifier\":")
            w.string(a.id)
            w.raw(",\"options\":")
            w.int(Int64(a.options))
            if let button = a.textButtonTitle {
                w.raw(",\"textInput\":{\"buttonTitle\":")
                w.string(button)
                w.raw(",\"placeholder\":")
                w.string(a.textPlaceholder ?? "")
                w.raw("}")
            }
            w.raw(",\"title\":")
            w.string(a.title)
            w.raw("}")
        }
        w.raw("},\"UNNotificationCategory\":{")
        for (i, c) in categories.sorted(by: { $0.id < $1.id }).enumerated() {
            if i > 0 { w.raw(",") }
            w.key(c.id)
            w.raw("{\"actions\":[")
            for (j, a) in c.actions.enumerated() {
                if j > 0 { w.raw(",") }
                w.string(a)
            }
            w.raw("],\"identifier\":")
            w.string(c.id)
            w.raw(",\"options\":")
            w.int(Int64(c.options))
            w.raw("}")
        }
        w.raw("}}}")
        return w.bytes
    }
}
