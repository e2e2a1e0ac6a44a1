import Foundation

/// Action identifiers iOS itself reports (UserNotifications), valid for every
/// campaign besides its category's own actions.
public enum ReplyAction {
    /// The user opened the notification (`UNNotificationDefaultActionIdentifier`).
    public static let defaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
    /// The user dismissed the notification (`UNNotificationDismissActionIdentifier`);
    /// iOS reports it only for categories with the `customDismissAction` option.
    public static let dismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"
}

/// The JSON body of `POST /v1/replies` (DESIGN contract 4), shared by the
/// extension that sends it and the server that reads it.
///
/// Decoding is strict: every key must be known, `delivery` an integer,
/// `occurred_at` an RFC 3339 timestamp, `reply_id` a UUID, `text` a string or
/// absent/null. Encoding writes `occurred_at` as UTC whole seconds
/// (`2026-11-20T10:00:00Z`) and `reply_id` in lowercase, whatever the
/// encoder's strategies.
public struct ReplyBody: Codable, Sendable, Hashable {
    /// The delivery answered (``HeraldNotification/delivery``).
    public var delivery: Int64
    /// The delivery's reply token (``HeraldNotification/replyToken``).
    public var token: String
    /// The action identifier the user chose: one of the category's actions or of ``ReplyAction``.
    public var action: String
    /// What the user typed, for a text-input action only (at most 2000 Unicode code points).
    public var text: String?
    /// When the user acted. Whole seconds travel; a fraction is dropped.
    public var occurredAt: Date
    /// The client's id for this reply, so a retry is recognised.
    public var replyID: UUID

    /// A reply body; `occurredAt` is rounded down to the whole second.
    public init(delivery: Int64, token: String, action: String, text: String? = nil, occurredAt: Date, replyID: UUID) {
        self.delivery = delivery
        self.token = token
        self.action = action
        self.text = text
        self.occurredAt = Date(timeIntervalSince1970: occurredAt.timeIntervalSince1970.rounded(.down))
        self.replyID = replyID
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case delivery
        case token
        case action
        case text
        case occurredAt = "occurred_at"
        case replyID = "reply_id"
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes a body strictly, as the server does: unknown keys, a
    /// timestamp that is not RFC 3339 or a `reply_id` that is not a UUID throw.
    public init(from decoder: any Decoder) throws {
        let keys = try decoder.container(keyedBy: AnyKey.self).allKeys
        if let unknown = keys.first(where: { CodingKeys(stringValue: $0.stringValue) == nil }) {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath + [unknown],
                debugDescription: "unknown key \"\(unknown.stringValue)\""
            ))
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        delivery = try container.decode(Int64.self, forKey: .delivery)
        token = try container.decode(String.self, forKey: .token)
        action = try container.decode(String.self, forKey: .action)
        text = try container.decodeIfPresent(String.self, forKey: .text)
        let occurred = try container.decode(String.self, forKey: .occurredAt)
        guard let date = UTCTimestamp.parse(occurred) else {
            throw DecodingError.dataCorruptedError(
                forKey: .occurredAt, in: container,
                debugDescription: "expected an RFC 3339 timestamp such as 2026-11-20T10:00:00Z"
            )
        }
        occurredAt = date
        let id = try container.decode(String.self, forKey: .replyID)
        guard let uuid = UUID(uuidString: id) else {
            throw DecodingError.dataCorruptedError(forKey: .replyID, in: container, debugDescription: "expected a UUID")
        }
        replyID = uuid
    }

    /// Encodes the body as the server reads it: `occurred_at` in UTC whole
    /// seconds, `reply_id` lowercase, `text` left out when `nil`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(delivery, forKey: .delivery)
        try container.encode(token, forKey: .token)
        try container.encode(action, forKey: .action)
        try container.encodeIfPresent(text, forKey: .text)
        try container.encode(UTCTimestamp.format(occurredAt), forKey: .occurredAt)
        try container.encode(replyID.uuidString.lowercased(), forKey: .replyID)
    }
}

extension ReplyBody {
    /// `occurred_at` as the decoder reads it: an RFC 3339 timestamp (`Z` or
    /// an offset; a fraction is dropped). nil: not one.
    public static func timestamp(_ text: String) -> Date? {
        UTCTimestamp.parse(text)
    }
}

/// An HTTP request as plain values: the extension turns it into a `URLRequest`
/// (`urlRequest`, on Apple platforms), tests read it directly.
///
/// ``ReplyRequestBuilder`` and ``AppRequestBuilder`` both make these.
public struct ReplyHTTPRequest: Sendable {
    /// The full URL.
    public var url: URL
    /// The HTTP method: `POST`, `PUT`, `DELETE` or `GET`.
    public var method: String
    /// The headers, in order.
    public var headers: [(name: String, value: String)]
    /// The body; empty for `GET` and `DELETE`.
    public var body: Data

    /// A request from its parts.
    public init(url: URL, method: String, headers: [(name: String, value: String)], body: Data) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }

    /// The first header named `name`, compared case-insensitively.
    public func value(forHeader name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

#if !canImport(FoundationNetworking)
extension ReplyHTTPRequest {
    /// The request for `URLSession`.
    public var urlRequest: URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for header in headers {
            request.addValue(header.value, forHTTPHeaderField: header.name)
        }
        request.httpBody = body
        return request
    }
}
#endif

/// Why a reply request could not be built.
public struct ReplyRequestError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case noReplyToken
        case emptyAction
        case encodingFailed
    }

    private let code: Code

    /// The notification carries no reply token (`herald.r`): the campaign takes no replies.
    public static let noReplyToken = Self(code: .noReplyToken)
    /// The action identifier is empty.
    public static let emptyAction = Self(code: .emptyAction)
    /// The body could not be encoded as JSON.
    public static let encodingFailed = Self(code: .encodingFailed)

    /// A one-line reason.
    public var description: String {
        switch code {
        case .noReplyToken: "notification has no reply token; its campaign takes no replies"
        case .emptyAction: "reply action identifier is empty"
        case .encodingFailed: "reply body could not be encoded"
        }
    }
}

/// Builds `POST /v1/replies` requests for a notification (DESIGN contract 4).
public struct ReplyRequestBuilder: Sendable {
    /// `<baseURL>/v1/replies`.
    public let endpoint: URL

    /// `baseURL` is where Herald's reply intake is served, with or without a
    /// path prefix (`https://push.example.com` or `https://example.com/herald/`).
    public init(baseURL: URL) {
        endpoint = baseURL.appending(path: "v1/replies")
    }

    /// The body for the user's `action` (a category action identifier or one of
    /// ``ReplyAction``) and, for text-input actions, the typed `text`.
    public func body(
        for notification: HeraldNotification,
        action: String,
        text: String? = nil,
        occurredAt: Date,
        replyID: UUID
    ) throws(ReplyRequestError) -> ReplyBody {
        guard let token = notification.replyToken else { throw .noReplyToken }
        guard !action.isEmpty else { throw .emptyAction }
        return ReplyBody(
            delivery: notification.delivery,
            token: token,
            action: action,
            text: text,
            occurredAt: occurredAt,
            replyID: replyID
        )
    }

    /// The request for the user's `action`. Keep `replyID` to retry with the
    /// same id: the server stores a reply once.
    public func request(
        for notification: HeraldNotification,
        action: String,
        text: String? = nil,
        occurredAt: Date,
        replyID: UUID
    ) throws(ReplyRequestError) -> ReplyHTTPRequest {
        try request(for: body(for: notification, action: action, text: text, occurredAt: occurredAt, replyID: replyID))
    }

    /// The request carrying `body` (for a retry of a stored body).
    public func request(for body: ReplyBody) throws(ReplyRequestError) -> ReplyHTTPRequest {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(body)
        } catch {
            throw .encodingFailed
        }
        return ReplyHTTPRequest(
            url: endpoint,
            method: "POST",
            headers: [
                (name: "content-type", value: "application/json"),
                (name: "accept", value: "application/json"),
            ],
            body: data
        )
    }
}
