import Foundation

/// What a Herald push carries (DESIGN contract 2), as an extension reads it.
///
/// Parse it from `UNNotificationContent.userInfo` on a device, or from the raw
/// APNs JSON (`Data`) anywhere else.
public struct HeraldNotification: Sendable, Hashable {
    /// The campaign's kind (`herald.k`). Unknown kinds are kept as they are.
    public struct Kind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The kind as the payload spells it (`poster`, `flash_sale`, `feedback`).
        public var rawValue: String
        /// The kind spelt `rawValue`, known or not.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// An announcement with a poster image or animated GIF.
        public static let poster = Self(rawValue: "poster")
        /// A time-limited offer with buttons.
        public static let flashSale = Self(rawValue: "flash_sale")
        /// A question answered by typing.
        public static let feedback = Self(rawValue: "feedback")

        /// The ``rawValue``.
        public var description: String { rawValue }

        /// Decodes the kind from a JSON string.
        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }

        /// Encodes the kind as a JSON string.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
    }

    /// Media the Notification Service Extension downloads and attaches (`herald.media`).
    ///
    /// The kit only reads it: downloading the file and making the
    /// `UNNotificationAttachment` is the service extension's job.
    public struct Media: Sendable, Hashable, Codable {
        /// Where to download the file from.
        public var url: URL
        /// The server's media type label, e.g. `gif`, `png`, `jpg`, `mp4`.
        public var type: String

        /// Media at `url` of type `type`.
        public init(url: URL, type: String) {
            self.url = url
            self.type = type
        }
    }

    /// Campaign id (`herald.c`).
    public var campaign: Int64
    /// Delivery id (`herald.d`); a reply names it.
    public var delivery: Int64
    /// Campaign kind (`herald.k`).
    public var kind: Kind
    /// Reply token (`herald.r`), present when replies are accepted.
    public var replyToken: String?
    /// Media to attach (`herald.media`).
    public var media: Media?
    /// Sensitive fields sealed to this device (`herald.sealed`); open with ``EnvelopeOpener``.
    public var sealed: SealedEnvelope?
    /// The string-valued entries of `herald.x`, the campaign's own extra fields.
    /// Entries of other JSON types are left out.
    public var custom: [String: String]
    /// `aps.category`: the registered category whose actions the user sees.
    public var category: String?

    /// A notification from its parts (tests, previews); a device parses one
    /// with ``init(userInfo:)``.
    public init(
        campaign: Int64,
        delivery: Int64,
        kind: Kind,
        replyToken: String? = nil,
        media: Media? = nil,
        sealed: SealedEnvelope? = nil,
        custom: [String: String] = [:],
        category: String? = nil
    ) {
        self.campaign = campaign
        self.delivery = delivery
        self.kind = kind
        self.replyToken = replyToken
        self.media = media
        self.sealed = sealed
        self.custom = custom
        self.category = category
    }

    /// Parses the whole APNs payload (`{"aps": …, "herald": …}`) as JSON bytes.
    public init(json: Data) throws(NotificationParseError) {
        let payload: Payload
        do {
            payload = try JSONDecoder().decode(Payload.self, from: json)
        } catch {
            throw Self.parseError(error, json: json)
        }
        self.init(payload)
    }

    /// Parses the userInfo dictionary an extension receives
    /// (`UNNotificationContent.userInfo`), which is the APNs payload as objects.
    public init(userInfo: [AnyHashable: Any]) throws(NotificationParseError) {
        guard JSONSerialization.isValidJSONObject(userInfo) else {
            throw .notJSON("userInfo holds values JSON cannot represent")
        }
        let data: Data
        do {
            data = try JSONSerialization.data(withJSONObject: userInfo)
        } catch {
            throw .notJSON("userInfo could not be serialized")
        }
        try self.init(json: data)
    }

    private init(_ payload: Payload) {
        self.init(
            campaign: payload.herald.c,
            delivery: payload.herald.d,
            kind: payload.herald.k,
            replyToken: payload.herald.r,
            media: payload.herald.media,
            sealed: payload.herald.sealed,
            custom: payload.herald.x?.values ?? [:],
            category: payload.aps?.category
        )
    }

    private static func parseError(_ error: any Error, json: Data) -> NotificationParseError {
        let parsed = classify(error)
        guard parsed == .notJSON else { return parsed }
        // Some decoders report a well-formed value of the wrong kind (a fraction
        // where an integer belongs) as invalid JSON; look again on this rare path.
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            return parsed
        }
        return object["herald"] == nil ? .notHerald : .malformed("herald has a value of the wrong kind")
    }

    private static func classify(_ error: any Error) -> NotificationParseError {
        guard let error = error as? DecodingError else { return .notJSON }
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            (codingPath + (last.map { [$0] } ?? [])).map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context) where context.codingPath.isEmpty && key.stringValue == "herald":
            return .notHerald
        case .keyNotFound(let key, let context):
            return .malformed("\(path(context.codingPath, key)) is missing")
        case .typeMismatch(_, let context) where context.codingPath.isEmpty:
            return .notJSON
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return .malformed("\(path(context.codingPath)) has the wrong type")
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return .notJSON
        case .dataCorrupted(let context):
            return .malformed("\(path(context.codingPath)) is invalid")
        @unknown default:
            return .malformed
        }
    }
}

// MARK: - Wire shape

private struct Payload: Decodable {
    struct APS: Decodable {
        var category: String?
    }

    struct Herald: Decodable {
        var c: Int64
        var d: Int64
        var k: HeraldNotification.Kind
        var r: String?
        var media: HeraldNotification.Media?
        var sealed: SealedEnvelope?
        var x: StringEntries?
    }

    var aps: APS?
    var herald: Herald
}

/// A JSON object of which only the string-valued entries are kept.
private struct StringEntries: Decodable {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    var values: [String: String]

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var values: [String: String] = [:]
        for key in container.allKeys {
            if let value = try? container.decode(String.self, forKey: key) {
                values[key.stringValue] = value
            }
        }
        self.values = values
    }
}
