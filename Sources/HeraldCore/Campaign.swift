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

/// The text a device shows, in one locale. Each part is literal text, or a
/// key of the app's own Localizable.strings with its arguments
/// (`title-loc-key`/`title-loc-args`, `subtitle-loc-key`/…, `loc-key`/`loc-args`).
public struct LocalizedText: Sendable, Hashable {
    public enum Part: Sendable, Hashable {
        case text(String)
        case key(String, args: [String])
    }

    public var title: Part
    public var subtitle: Part?
    public var body: Part

    public init(title: String, subtitle: String? = nil, body: String) {
        self.title = .text(title)
        self.subtitle = subtitle.map { .text($0) }
        self.body = .text(body)
    }

    public init(title: Part, subtitle: Part? = nil, body: Part) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
    }

    /// Reads one entry of a campaign's `content`; the error names the problem.
    public init(json entry: JSONValue) throws(CampaignProblem) {
        if let problem = Self.problem(entry) { throw CampaignProblem(problem) }
        guard case .object(let fields) = entry else { throw CampaignProblem(Self.notAnObject) }
        func part(_ i: Int) -> Part? {
            if let text = fields[Self.parts[i]]?.stringValue { return .text(text) }
            guard let key = fields[Self.keys[i]]?.stringValue else { return nil }
            let args = fields[Self.args[i]]?.arrayValue?.compactMap(\.stringValue) ?? []
            return .key(key, args: args)
        }
        guard let title = part(0), let body = part(2) else { throw CampaignProblem(Self.needsTitleAndBody) }
        self.init(title: title, subtitle: part(1), body: body)
    }

    static let parts = ["title", "subtitle", "body"]
    static let keys = ["title-loc-key", "subtitle-loc-key", "loc-key"]
    static let args = ["title-loc-args", "subtitle-loc-args", "loc-args"]
    static let notAnObject = "must be an object with \"title\" and \"body\" (or \"title-loc-key\" and \"loc-key\")"
    static let needsTitleAndBody = "needs a text \"title\" and \"body\" (or \"title-loc-key\" and \"loc-key\")"

    /// What is wrong with one entry of a campaign's `content`, in the words
    /// and order of `herald_campaign_content_problem`, which
    /// checks each campaign when it is written; nil when nothing is. A
    /// golden table of entries holds the two to the same answers (StoreTests).
    public static func problem(_ entry: JSONValue) -> String? {
        guard case .object(let fields) = entry else { return notAnObject }
        // jsonb's own key order (shorter first, then bytewise): the first unknown key SQL meets.
        let known = Set(parts + keys + args)
        let order = fields.keys.sorted { a, b in
            a.utf8.count != b.utf8.count ? a.utf8.count < b.utf8.count : a.utf8.lexicographicallyPrecedes(b.utf8)
        }
        if let unknown = order.first(where: { !known.contains($0) }) {
            return "has \"\(unknown)\"; use title, subtitle, body, title-loc-key, subtitle-loc-key, loc-key, title-loc-args, subtitle-loc-args or loc-args"
        }
        for i in 0..<3 {
            let (part, key, arg) = (parts[i], keys[i], args[i])
            if let value = fields[part], value.stringValue == nil { return "\"\(part)\" must be text" }
            if let value = fields[key], (value.stringValue ?? "").isEmpty {
                return "\"\(key)\" must be a non-empty text (a key of the app's Localizable.strings)"
            }
            if fields[part] != nil, fields[key] != nil { return "give \"\(part)\" or \"\(key)\", not both" }
            if let value = fields[arg] {
                guard fields[key] != nil else { return "\"\(arg)\" needs \"\(key)\"" }
                guard let items = value.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
                    return "\"\(arg)\" must be a list of texts"
                }
            }
        }
        if (fields["title"] == nil && fields["title-loc-key"] == nil) || (fields["body"] == nil && fields["loc-key"] == nil) {
            return needsTitleAndBody
        }
        return nil
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

/// One A/B variant of a campaign (`campaign_variants`): its own text in
/// the locales it gives, optionally its own media, and its share of the
/// audience in whole percent.
public struct CampaignVariant: Sendable, Hashable {
    public var name: String
    public var share: Int
    /// Replaces the campaign's text in these locales; the others keep the campaign's.
    public var content: [String: LocalizedText]
    /// Replaces the campaign's media (with `mediaType`) when set.
    public var mediaURL: String?
    public var mediaType: String?
    /// Its devices at each user's best hour, or not (nil: as the campaign).
    public var bestHour: Bool?

    public init(name: String, share: Int, content: [String: LocalizedText], mediaURL: String? = nil, mediaType: String? = nil) {
        self.name = name
        self.share = share
        self.content = content
        self.mediaURL = mediaURL
        self.mediaType = mediaType
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

/// The fallback chain of localized text (campaign content, action titles).
public enum LocaleMatch {
    /// The key of `available` to show for `wanted`: the exact tag (case and
    /// `_`/`-` ignored), then the tag with trailing parts dropped
    /// (`zh-Hans-CN` → `zh-Hans` → `zh`), then any entry of the same language
    /// (the first in sorted order), then `defaultKey`.
    public static func best(for wanted: String, among available: some Collection<String>, default defaultKey: String) -> String {
        Table(available, default: defaultKey).best(for: wanted)
    }

    /// The keys of a collection prepared once for many look-ups (a run
    /// resolves every device's locale against the same campaign text).
    public struct Table: Sendable {
        private var byNormal: [String: String] = [:]
        private let defaultKey: String
        /// Normalized keys in sorted order, for the same-language fallback.
        private let sortedNormal: [String]

        public init(_ available: some Collection<String>, default defaultKey: String) {
            for key in available { byNormal[LocaleMatch.normalize(key)] = key }
            self.defaultKey = defaultKey
            sortedNormal = byNormal.keys.sorted()
        }

        public func best(for wanted: String) -> String {
            let wanted = LocaleMatch.normalize(wanted)
            var candidate = Substring(wanted)
            while !candidate.isEmpty {
                if let key = byNormal[String(candidate)] { return key }
                guard let dash = candidate.lastIndex(of: "-") else { break }
                candidate = candidate[..<dash]
            }
            let language = wanted.split(separator: "-").first.map(String.init) ?? wanted
            if let key = sortedNormal.first(where: { $0.split(separator: "-").first.map(String.init) == language }) {
                return byNormal[key] ?? defaultKey
            }
            return defaultKey
        }
    }

    /// `_` as `-`, lower case. Tags are ASCII, handled without Foundation:
    /// a run normalizes every device's locale, too often for NSString's replacing.
    public static func normalize(_ tag: String) -> String {
        guard tag.utf8.allSatisfy({ $0 < 0x80 }) else {
            return tag.replacingOccurrences(of: "_", with: "-").lowercased()
        }
        guard tag.utf8.contains(where: { $0 == UInt8(ascii: "_") || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
            return tag
        }
        return String(decoding: tag.utf8.map { byte -> UInt8 in
            if byte == UInt8(ascii: "_") { return UInt8(ascii: "-") }
            if (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) { return byte + 32 }
            return byte
        }, as: UTF8.self)
    }

    /// A BCP 47 tag as apps report them (`en`, `fr-CA`, `zh-Hans`, `zh_Hant_TW`).
    public static func isTag(_ tag: String) -> Bool {
        let parts = tag.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let first = parts.first, (2...3).contains(first.count),
              first.unicodeScalars.allSatisfy({ $0.isASCII && CharacterSet.letters.contains($0) }) else { return false }
        return parts.dropFirst().allSatisfy { p in
            (1...8).contains(p.count) && p.unicodeScalars.allSatisfy { $0.isASCII && CharacterSet.alphanumerics.contains($0) }
        }
    }
}

/// One device of a campaign's audience, as the payload builder sees it.
public struct DeliveryTarget: Sendable, Hashable {
    public var deliveryID: Int64
    public var deviceToken: String
    public var environment: APNsEnvironment
    public var locale: String
    public var publicKey: String?
    public var keyID: String?
    public var apnsID: UUID
    /// The campaign variant recorded on the delivery (nil: the campaign has none).
    public var variant: String?
    /// The app the device belongs to (`apps.name`): its topic and credential.
    public var app: String
    /// Its values of the variables the campaign's templates name (nil: the
    /// campaign has none, or they were not read).
    public var personal: PersonalValues?
    /// The Live Activity token a sale's step goes to instead of `deviceToken`: the device's
    /// push-to-start token (the start; nil: the device gets the alert), or its activity's update
    /// token (an update or the end).
    public var activityToken: String?

    public init(deliveryID: Int64, deviceToken: String, environment: APNsEnvironment, locale: String,
                publicKey: String? = nil, keyID: String? = nil, apnsID: UUID = UUID(), variant: String? = nil,
                app: String = "default", personal: PersonalValues? = nil) {
        self.deliveryID = deliveryID
        self.deviceToken = deviceToken
        self.environment = environment
        self.locale = locale
        self.publicKey = publicKey
        self.keyID = keyID
        self.apnsID = apnsID
        self.variant = variant
        self.app = app
        self.personal = personal
    }
}
