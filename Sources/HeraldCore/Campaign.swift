import Foundation

/// The three kinds of campaign (DESIGN, "The three kinds of campaign").
public enum CampaignKind: String, Sendable, Hashable, CaseIterable {
    case poster
    case flashSale = "flash_sale"
    case feedback
}

public enum CampaignStatus: String, Sendable, Hashable {
    case draft, scheduled, running, paused, completed, cancelled, failed
}

/// The text a device shows, in one locale.
public struct LocalizedText: Sendable, Hashable {
    public var title: String
    public var subtitle: String?
    public var body: String

    public init(title: String, subtitle: String? = nil, body: String) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
    }
}

/// A campaign as the batch run needs it.
public struct Campaign: Sendable, Hashable {
    public var id: Int64
    public var name: String
    public var kind: CampaignKind
    public var status: CampaignStatus
    /// Keyed by locale tag as written by the marketer (`en`, `zh-Hans`, …).
    public var content: [String: LocalizedText]
    public var defaultLocale: String
    public var mediaURL: String?
    public var mediaType: String?
    public var categoryID: String?
    public var custom: [String: JSONValue]
    /// Fields sealed to each device's key; nil when the campaign has none.
    public var sensitive: [String: JSONValue]?
    public var sendAt: Date
    public var expiresAt: Date?
    public var priority: Int
    public var collapseID: String?
    public var threadID: String?
    public var interruptionLevel: String?
    public var relevanceScore: Double?
    public var sound: String?
    public var quietHours: Bool
    public var frequencyCapped: Bool

    public init(
        id: Int64, name: String, kind: CampaignKind, status: CampaignStatus = .scheduled,
        content: [String: LocalizedText], defaultLocale: String = "en",
        mediaURL: String? = nil, mediaType: String? = nil, categoryID: String? = nil,
        custom: [String: JSONValue] = [:], sensitive: [String: JSONValue]? = nil,
        sendAt: Date = Date(), expiresAt: Date? = nil, priority: Int = 10,
        collapseID: String? = nil, threadID: String? = nil, interruptionLevel: String? = nil,
        relevanceScore: Double? = nil, sound: String? = "default",
        quietHours: Bool = true, frequencyCapped: Bool = true
    ) {
        self.id = id
        self.name = name
        self.kind = kind
        self.status = status
        self.content = content
        self.defaultLocale = defaultLocale
        self.mediaURL = mediaURL
        self.mediaType = mediaType
        self.categoryID = categoryID
        self.custom = custom
        self.sensitive = sensitive
        self.sendAt = sendAt
        self.expiresAt = expiresAt
        self.priority = priority
        self.collapseID = collapseID
        self.threadID = threadID
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.sound = sound
        self.quietHours = quietHours
        self.frequencyCapped = frequencyCapped
    }

    /// The collapse id every delivery of this campaign carries, so that a
    /// repeat replaces the earlier notification on the device.
    public var effectiveCollapseID: String { collapseID ?? "herald-\(id)" }

    /// Flash sales interrupt as time-sensitive unless the marketer chose otherwise.
    public var effectiveInterruptionLevel: String? {
        interruptionLevel ?? (kind == .flashSale ? "time-sensitive" : nil)
    }

    public var hasSensitiveFields: Bool { !(sensitive ?? [:]).isEmpty }

    /// Whether the Notification Service Extension must run (`mutable-content: 1`):
    /// to attach the media or to open the sealed fields.
    public var needsServiceExtension: Bool { mediaURL != nil || hasSensitiveFields }

    /// The content key to show a device whose locale is `deviceLocale`:
    /// the exact tag, then the tag with trailing parts dropped (`zh-Hans-CN` →
    /// `zh-Hans` → `zh`), then any entry of the same language, then the default.
    public func contentLocale(for deviceLocale: String) -> String {
        let wanted = Self.normalize(deviceLocale)
        var byNormal: [String: String] = [:]
        for key in content.keys { byNormal[Self.normalize(key)] = key }
        var candidate = Substring(wanted)
        while !candidate.isEmpty {
            if let key = byNormal[String(candidate)] { return key }
            guard let dash = candidate.lastIndex(of: "-") else { break }
            candidate = candidate[..<dash]
        }
        let language = wanted.split(separator: "-").first.map(String.init) ?? wanted
        if let key = byNormal.keys.sorted().first(where: { $0.split(separator: "-").first.map(String.init) == language }) {
            return byNormal[key] ?? defaultLocale
        }
        return defaultLocale
    }

    static func normalize(_ tag: String) -> String {
        tag.replacingOccurrences(of: "_", with: "-").lowercased()
    }
}

/// One device of a campaign's audience, as the payload builder sees it.
public struct DeliveryTarget: Sendable, Hashable {
    public var deliveryID: Int64
    public var deviceToken: String
    public var environment: String
    public var locale: String
    public var publicKey: String?
    public var keyID: String?
    public var apnsID: UUID

    public init(deliveryID: Int64, deviceToken: String, environment: String, locale: String,
                publicKey: String? = nil, keyID: String? = nil, apnsID: UUID = UUID()) {
        self.deliveryID = deliveryID
        self.deviceToken = deviceToken
        self.environment = environment
        self.locale = locale
        self.publicKey = publicKey
        self.keyID = keyID
        self.apnsID = apnsID
    }
}
