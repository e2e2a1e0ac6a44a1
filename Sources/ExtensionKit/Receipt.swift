import Foundation

/// One delivery receipt (DESIGN contract 8): the Notification Service
/// Extension says a notification arrived, with its reply token as proof.
public struct Receipt: Sendable, Hashable {
    /// The delivery that arrived (``HeraldNotification/delivery``).
    public var delivery: Int64
    /// Its reply token (``HeraldNotification/replyToken``).
    public var token: String
    /// When the extension ran, to the millisecond (a delivery's latency is
    /// often under a second).
    public var arrivedAt: Date
    /// Whether the sealed fields opened; nil when the notification had none.
    public var sealedOpened: Bool?
    /// Whether the media downloaded and attached; nil when it had none.
    public var mediaAttached: Bool?

    public init(delivery: Int64, token: String, arrivedAt: Date, sealedOpened: Bool? = nil, mediaAttached: Bool? = nil) {
        self.delivery = delivery
        self.token = token
        self.arrivedAt = Date(timeIntervalSince1970: (arrivedAt.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
        self.sealedOpened = sealedOpened
        self.mediaAttached = mediaAttached
    }

    /// `arrived_at` as the server reads it: RFC 3339, the fraction kept to
    /// the millisecond. nil: not one.
    public static func timestamp(_ text: String) -> Date? {
        UTCTimestamp.parse(text, keepingMilliseconds: true)
    }

    /// At most this many receipts a request.
    public static let maxPerRequest = 50

    /// The request body, `{"receipts":[…]}`, encoded as a reply body is
    /// (sorted keys; `arrived_at` in UTC with milliseconds).
    public static func body(_ receipts: [Receipt]) throws(ReplyRequestError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(["receipts": receipts])
        } catch {
            throw .encodingFailed
        }
    }
}

extension Receipt: Encodable {
    enum CodingKeys: String, CodingKey {
        case delivery, token
        case arrivedAt = "arrived_at"
        case sealedOpened = "sealed_opened"
        case mediaAttached = "media_attached"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(delivery, forKey: .delivery)
        try container.encode(token, forKey: .token)
        try container.encode(UTCTimestamp.format(arrivedAt, milliseconds: true), forKey: .arrivedAt)
        try container.encodeIfPresent(sealedOpened, forKey: .sealedOpened)
        try container.encodeIfPresent(mediaAttached, forKey: .mediaAttached)
    }
}
