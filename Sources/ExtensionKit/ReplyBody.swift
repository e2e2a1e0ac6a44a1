import Foundation

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
