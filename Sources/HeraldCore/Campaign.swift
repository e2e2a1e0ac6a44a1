import Foundation

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
    /// The pool its `{{ code }}` draws from (`code_pools`; nil: none).
    public var codePool: String?
    /// Each user at their best hour (`herald_best_hours`), unless a variant says otherwise.
    public var bestHour = false
    /// The campaign's A/B variants in name order (the first is the
    /// baseline); empty when it has none.
    public var variants: [CampaignVariant]
    /// How fast it may go out; nil: as fast as APNs takes it.
    public var pace: CampaignPace?
    /// The sale as a Live Activity, as written (`campaigns.live_activity`; read by `LiveActivitySale`).
    public var liveActivity: JSONValue?
    /// A step of a Live Activity sale (an update or the end): the sale and the step's number.
    public var saleID: Int64?
    public var saleStep: Int?
    /// When it starts, its audience's widgets reload (a `widgets` push to each device with a widget token).
    public var widgetsPush = false
    /// The campaign whose widget push this row is (its devices with a widget token get one `widgets` push).
    public var widgetsOf: Int64?
    /// The journey whose send step this campaign is the message of (its rows are written by
    /// the journey's members' moves, never by a snapshot).
    public var journeyID: Int64?

    public init(
        id: Int64, name: String, kind: CampaignKind, status: CampaignStatus = .scheduled,
        content: [String: LocalizedText], defaultLocale: String = "en",
        mediaURL: String? = nil, mediaType: String? = nil, categoryID: String? = nil,
        custom: [String: JSONValue] = [:], sensitive: [String: JSONValue]? = nil,
        sendAt: Date = Date(), expiresAt: Date? = nil, priority: Int = 10,
        collapseID: String? = nil, threadID: String? = nil, interruptionLevel: String? = nil,
        relevanceScore: Double? = nil, sound: String? = "default",
        quietHours: Bool = true, frequencyCapped: Bool = true, variants: [CampaignVariant] = []
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
        self.variants = variants
    }

    /// The collapse id every delivery of this campaign carries, so that a
    /// repeat replaces the earlier notification on the device.
    public var effectiveCollapseID: String { collapseID ?? "herald-\(id)" }

    /// Flash sales interrupt as time-sensitive unless the marketer chose otherwise.
    public var effectiveInterruptionLevel: String? {
        Self.interruptionLevel(kind: kind, chosen: interruptionLevel)
    }

    /// The interruption level of a campaign of `kind` whose row says `chosen`.
    public static func interruptionLevel(kind: CampaignKind, chosen: String?) -> String? {
        chosen ?? (kind == .flashSale ? "time-sensitive" : nil)
    }

    /// Whether its notifications break through Focus (time-sensitive or critical).
    public static func interrupts(kind: CampaignKind, chosen: String?) -> Bool {
        ["time-sensitive", "critical"].contains(interruptionLevel(kind: kind, chosen: chosen) ?? "")
    }

    public var hasSensitiveFields: Bool { !(sensitive ?? [:]).isEmpty }

    /// Whether the Notification Service Extension must run (`mutable-content: 1`):
    /// to attach the media or to open the sealed fields.
    public var needsServiceExtension: Bool { mediaURL != nil || hasSensitiveFields }

    /// The content key to show a device whose locale is `deviceLocale`:
    /// the exact tag, then the tag with trailing parts dropped (`zh-Hans-CN` →
    /// `zh-Hans` → `zh`), then any entry of the same language, then the default.
    public func contentLocale(for deviceLocale: String) -> String {
        LocaleMatch.best(for: deviceLocale, among: content.keys, default: defaultLocale)
    }
}

extension Campaign {
    /// The campaign as the devices of `variant` get it: the variant's text
    /// over the campaign's, its media instead of the campaign's. The
    /// result has no variants of its own.
    public func applying(_ variant: CampaignVariant) -> Campaign {
        var c = self
        c.variants = []
        c.content.merge(variant.content) { _, mine in mine }
        if let url = variant.mediaURL {
            c.mediaURL = url
            c.mediaType = variant.mediaType
        }
        return c
    }

    /// The variant named `name`, if the campaign has it.
    public func variant(named name: String) -> CampaignVariant? {
        variants.first { $0.name == name }
    }

    /// Why the campaign's set of variants cannot be sent, naming the
    /// campaign (nil when it has none, or a valid set): 2 to 4 variants
    /// whose shares add up to 100.
    public var variantProblem: CampaignProblem? {
        guard !variants.isEmpty else { return nil }
        let list = variants.map { "\($0.name) \($0.share)%" }.joined(separator: ", ")
        if variants.count == 1 {
            return CampaignProblem("campaign \"\(name)\": it has one variant (\(list)); give it 2 to 4 variants, or none")
        }
        if variants.count > 4 {
            return CampaignProblem("campaign \"\(name)\": it has \(variants.count) variants (\(list)); a campaign has at most 4")
        }
        if let bad = variants.first(where: { !(1...99).contains($0.share) }) {
            return CampaignProblem("campaign \"\(name)\": variant \"\(bad.name)\" has a share of \(bad.share)%; each share is 1 to 99")
        }
        let total = variants.reduce(0) { $0 + $1.share }
        if total != 100 {
            return CampaignProblem("campaign \"\(name)\": its variant shares add up to \(total)% (\(list)); they must add up to 100%")
        }
        return nil
    }

    /// Each variant's lower bound among the 100 buckets of
    /// `herald_variant_bucket`: shares laid end to end from 0.
    public var variantLowerBounds: [Int] {
        var bounds: [Int] = []
        var at = 0
        for v in variants {
            bounds.append(at)
            at += v.share
        }
        return bounds
    }
}
