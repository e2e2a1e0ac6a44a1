import ExtensionKit
import Foundation

/// Builds the payload of contract 2 for every device of one campaign. The
/// parts that depend only on the campaign, the variant and the locale are
/// rendered once; a delivery appends its own ids, reply token and envelope.
/// A delivery of a variant gets that variant's text and media. A text that
/// holds a template (`{{ … }}`) is parsed here, once, and rendered into its
/// place for each device (DESIGN, "Personal text").
public struct PayloadBuilder: Sendable {
    /// APNs refuses larger bodies (PayloadTooLarge).
    public static let maxBytes = 4096
    /// …and larger broadcasts to a channel.
    public static let broadcastMaxBytes = 5120

    public let campaign: Campaign
    /// The campaign's sensitive fields as the JSON object that is sealed to
    /// each device; nil when it has none, or when they hold templates (then
    /// each device's are made by `parts(for:)`).
    public let sensitiveJSON: [UInt8]?
    /// Whether the campaign has sensitive fields to seal to each device.
    public let seals: Bool
    /// The variables the campaign's templates name, in the order
    /// `DeliveryTarget.personal` answers them (empty: it has none).
    public let variables: [Template.Variable]
    /// The campaign as sent to deliveries without a variant.
    private let base: Rendering
    /// Per variant name: the campaign as that variant's devices get it.
    private let byVariant: [String: Rendering]
    private let customTail: JSONPlan
    private let sensitive: JSONPlan?
    /// Formats of numbers, money and dates, per locale, for this campaign's run.
    private let formats = TemplateFormatCache()

    /// What one variant (or the campaign without one) renders once.
    private struct Rendering: Sendable {
        let campaign: Campaign
        var apsByLocale: [String: JSONPlan]
        var kindAndMedia: JSONPlan
        /// The content locales, for resolving each device's locale.
        let locales: LocaleMatch.Table

        init(_ campaign: Campaign, label: String) throws(CampaignProblem) {
            self.campaign = campaign
            locales = LocaleMatch.Table(campaign.content.keys, default: campaign.defaultLocale)
            var aps: [String: JSONPlan] = [:]
            for (locale, text) in campaign.content {
                aps[locale] = try PayloadBuilder.renderAPS(campaign: campaign, text: text, label: "\(label)content.\(locale)")
            }
            apsByLocale = aps
            var w = PlanWriter(capacity: 128)
            w.raw(",\"k\":")
            w.string(campaign.kind.rawValue)
            if let url = campaign.mediaURL {
                w.raw(",\"media\":{\"url\":")
                try w.text(url, field: "\(label)media_url")
                if let type = campaign.mediaType {
                    w.raw(",\"type\":")
                    w.string(type)
                }
                w.raw("}")
            }
            kindAndMedia = w.plan
        }

        mutating func bind(_ table: inout [Template.Variable]) {
            for key in apsByLocale.keys { apsByLocale[key]?.bind(&table) }
            kindAndMedia.bind(&table)
        }
    }

    public init(campaign: Campaign) throws(CampaignProblem) {
        self.campaign = campaign
        var base = try Rendering(campaign, label: "")
        var variants: [String: Rendering] = [:]
        for v in campaign.variants {
            variants[v.name] = try Rendering(campaign.applying(v), label: "variant \"\(v.name)\": ")
        }

        var x = PlanWriter(capacity: 64)
        if !campaign.custom.isEmpty {
            x.raw(",\"x\":")
            try x.value(.object(campaign.custom), field: "custom")
        }
        var customTail = x.plan

        var sensitive: JSONPlan?
        if let fields = campaign.sensitive, !fields.isEmpty {
            var j = PlanWriter(capacity: 128)
            try j.value(.object(fields), field: "sensitive")
            sensitive = j.plan
        }
        var table: [Template.Variable] = []
        base.bind(&table)
        for name in variants.keys.sorted() { variants[name]?.bind(&table) }
        customTail.bind(&table)
        sensitive?.bind(&table)
        self.base = base
        byVariant = variants
        self.customTail = customTail
        self.sensitive = sensitive
        sensitiveJSON = sensitive?.fixed
        seals = sensitive != nil
        variables = table
    }

    /// The rendering a delivery of `variant` gets (the campaign's own without
    /// one). A delivery always names a variant of the loaded campaign: the
    /// snapshot assigns from that list, and `campaign_variants_check` and
    /// `campaign_variants_keep` refuse to rename or delete a variant once the
    /// audience is assigned.
    private func rendering(_ variant: String?) -> Rendering {
        variant.flatMap { byVariant[$0] } ?? base
    }

    /// The campaign as the devices of `variant` get it (the campaign itself for nil).
    public func campaign(variant: String?) -> Campaign {
        rendering(variant).campaign
    }

    fileprivate static func renderAPS(campaign: Campaign, text: LocalizedText, label: String) throws(CampaignProblem) -> JSONPlan {
        var w = PlanWriter(capacity: 256)
        w.raw("{\"alert\":{")
        try part(text.title, literal: "title", key: "title-loc-key", args: "title-loc-args", first: true, label: label, into: &w)
        if let subtitle = text.subtitle {
            try part(subtitle, literal: "subtitle", key: "subtitle-loc-key", args: "subtitle-loc-args", first: false, label: label, into: &w)
        }
        try part(text.body, literal: "body", key: "loc-key", args: "loc-args", first: false, label: label, into: &w)
        w.raw("}")
        if let sound = campaign.sound {
            w.raw(",\"sound\":")
            w.string(sound)
        }
        if let category = campaign.categoryID {
            w.raw(",\"category\":")
            w.string(category)
        }
        w.raw(",\"thread-id\":")
        w.string(campaign.threadID ?? "campaign-\(campaign.id)")
        if campaign.needsServiceExtension {
            w.raw(",\"mutable-content\":1")
        }
        if let level = campaign.effectiveInterruptionLevel {
            w.raw(",\"interruption-level\":")
            w.string(level)
        }
        if let score = campaign.relevanceScore {
            w.raw(",\"relevance-score\":")
            w.double(score)
        }
        w.raw("}")
        return w.plan
    }

    /// One part of `aps.alert`: literal text, or a key of the app's strings and its arguments.
    private static func part(_ part: LocalizedText.Part, literal: String, key: String, args: String, first: Bool,
                             label: String, into w: inout PlanWriter) throws(CampaignProblem) {
        if !first { w.raw(",") }
        switch part {
        case .text(let s):
            w.key(literal)
            try w.text(s, field: "\(label).\(literal)")
        case .key(let k, let list):
            w.key(key)
            w.string(k)
            if !list.isEmpty {
                w.raw(",")
                w.key(args)
                try w.value(.array(list.map { .string($0) }), field: "\(label).\(args)")
            }
        }
    }

    /// One device's parts of its payload: its text and fields, with its own
    /// values in every template.
    public struct Parts: Sendable {
        var aps: [UInt8]
        var kindAndMedia: [UInt8]
        var custom: [UInt8]
        /// The sensitive fields to seal to the device (nil: none).
        public var sensitive: [UInt8]?
    }

    /// The device's parts, or the variable it lacks (it is skipped).
    public func parts(for target: DeliveryTarget) throws(TemplateMiss) -> Parts {
        let r = rendering(target.variant)
        let locale = r.locales.best(for: target.locale)
        let aps = r.apsByLocale[locale] ?? r.apsByLocale[campaign.defaultLocale] ?? JSONPlan()
        if variables.isEmpty {
            return Parts(aps: aps.fixed ?? [], kindAndMedia: r.kindAndMedia.fixed ?? [],
                         custom: customTail.fixed ?? [], sensitive: sensitiveJSON)
        }
        let context = PlanContext(
            variables: variables, values: target.personal, campaignName: campaign.name, locale: target.locale,
            formats: TemplateFormats(locale: target.locale, timeZone: target.personal?.timeZone, cache: formats))
        return Parts(aps: try aps.render(context), kindAndMedia: try r.kindAndMedia.render(context),
                     custom: try customTail.render(context), sensitive: try sensitive?.render(context))
    }

    /// The payload bytes for one device (its envelope sealed from `parts.sensitive`).
    public func payload(_ parts: Parts, for target: DeliveryTarget, replyToken: String?, sealed: SealedEnvelope?) -> [UInt8] {
        Self.payload(aps: parts.aps, kindAndMedia: parts.kindAndMedia, custom: parts.custom, campaign: campaign.id,
                     deliveryID: target.deliveryID, replyToken: replyToken, sealed: sealed)
    }

    /// The payload bytes for one device.
    public func payload(for target: DeliveryTarget, replyToken: String?, sealed: SealedEnvelope?) throws(TemplateMiss) -> [UInt8] {
        payload(try parts(for: target), for: target, replyToken: replyToken, sealed: sealed)
    }

    private static func payload(aps: [UInt8], kindAndMedia: [UInt8], custom: [UInt8], campaign: Int64, deliveryID: Int64,
                                replyToken: String?, sealed: SealedEnvelope?) -> [UInt8] {
        var w = JSONWriter(capacity: aps.count + kindAndMedia.count + custom.count + 220)
        w.raw("{\"aps\":")
        w.raw(aps)
        w.raw(",\"herald\":{\"c\":")
        w.int(campaign)
        w.raw(",\"d\":")
        w.int(deliveryID)
        w.raw(kindAndMedia)
        if let replyToken {
            w.raw(",\"r\":")
            w.string(replyToken)
        }
        if let sealed {
            w.raw(",\"sealed\":{\"v\":")
            w.int(Int64(sealed.v))
            w.raw(",\"kid\":")
            w.string(sealed.kid)
            w.raw(",\"enc\":")
            w.string(sealed.enc)
            w.raw(",\"ct\":")
            w.string(sealed.ct)
            w.raw("}")
        }
        w.raw(custom)
        w.raw("}}")
        return w.bytes
    }

    /// Why one device's payload is not sent: its templates made it too
    /// large. One text for every such device, so the analysts' reasons group.
    public static let tooLarge = "its payload, made for it, is over APNs' \(maxBytes) bytes"

    public func headers(for target: DeliveryTarget, topic: String) -> PushHeaders {
        PushHeaders(
            topic: topic, pushType: "alert", priority: campaign.priority,
            expiration: campaign.expiresAt.map { Int($0.timeIntervalSince1970) },
            collapseID: campaign.effectiveCollapseID, apnsID: target.apnsID)
    }

    /// The largest payload any device of this campaign can get, per content
    /// locale: the longest ids, a reply token and, when the campaign has
    /// sensitive fields, an envelope of the size their plaintext seals to.
    /// A template counts as its text without its outputs (the least it can
    /// be); each device's own payload is measured again as it is made.
    public func largestPayloads(variant: String? = nil) -> [(locale: String, bytes: Int)] {
        let r = rendering(variant)
        var envelope: SealedEnvelope?
        if let sensitive {
            envelope = Self.envelope(sealing: sensitive.leastCount)
        }
        return r.campaign.content.keys.sorted().map { locale in
            let aps = r.apsByLocale[locale] ?? JSONPlan()
            let bytes = Self.payload(aps: aps.least, kindAndMedia: r.kindAndMedia.least, custom: customTail.least,
                                     campaign: campaign.id, deliveryID: Int64.max,
                                     replyToken: String(repeating: "A", count: 22), sealed: envelope)
            return (locale, bytes.count)
        }
    }

    /// An envelope of the size `count` bytes of plaintext seal to, with the longest key id.
    public static func envelope(sealing count: Int) -> SealedEnvelope {
        let ctBytes = count + HeraldUserInfo.tagByteCount
        return SealedEnvelope(
            v: 1, kid: String(repeating: "k", count: DeviceKeyLimits.maxKeyIDBytes),
            enc: String(repeating: "A", count: 44),
            ct: String(repeating: "A", count: (ctBytes + 2) / 3 * 4))
    }
}
