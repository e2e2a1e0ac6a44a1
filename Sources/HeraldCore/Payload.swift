import ExtensionKit
import Foundation

/// The APNs request headers of one delivery (DESIGN, contract 1).
public struct PushHeaders: Sendable, Hashable {
    public var topic: String
    public var pushType: String
    public var priority: Int
    /// Epoch seconds; nil lets APNs store the notification for its default period.
    public var expiration: Int?
    public var collapseID: String
    public var apnsID: UUID

    public init(topic: String, pushType: String, priority: Int, expiration: Int?, collapseID: String, apnsID: UUID) {
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// The headers as APNs receives them, in a fixed order.
    public var fields: [(name: String, value: String)] {
        var f: [(String, String)] = [
            ("apns-topic", topic), ("apns-push-type", pushType), ("apns-priority", String(priority)),
        ]
        if let expiration { f.append(("apns-expiration", String(expiration))) }
        f.append(("apns-collapse-id", collapseID))
        f.append(("apns-id", apnsID.uuidString.lowercased()))
        return f
    }
}

/// Builds the payload of contract 2 for every device of one campaign. The
/// parts that depend only on the campaign, the variant and the locale are
/// rendered once; a delivery appends its own ids, reply token and envelope.
/// A delivery of a variant gets that variant's text and media.
public struct PayloadBuilder: Sendable {
    /// APNs refuses larger bodies (PayloadTooLarge).
    public static let maxBytes = 4096

    public let campaign: Campaign
    /// The campaign's sensitive fields as the JSON object that is sealed to each device.
    public let sensitiveJSON: [UInt8]?
    /// The campaign as sent to deliveries without a variant.
    private let base: Rendering
    /// Per variant name: the campaign as that variant's devices get it.
    private let byVariant: [String: Rendering]
    private let customTail: [UInt8]

    /// What one variant (or the campaign without one) renders once.
    private struct Rendering: Sendable {
        let campaign: Campaign
        let apsByLocale: [String: [UInt8]]
        let kindAndMedia: [UInt8]
        /// The content locales, for resolving each device's locale.
        let locales: LocaleMatch.Table

        init(_ campaign: Campaign) {
            self.campaign = campaign
            locales = LocaleMatch.Table(campaign.content.keys, default: campaign.defaultLocale)
            var aps: [String: [UInt8]] = [:]
            for (locale, text) in campaign.content {
                aps[locale] = PayloadBuilder.renderAPS(campaign: campaign, text: text)
            }
            apsByLocale = aps
            var w = JSONWriter(capacity: 128)
            w.raw(",\"k\":")
            w.string(campaign.kind.rawValue)
            if let url = campaign.mediaURL {
                w.raw(",\"media\":{\"url\":")
                w.string(url)
                if let type = campaign.mediaType {
                    w.raw(",\"type\":")
                    w.string(type)
                }
                w.raw("}")
            }
            kindAndMedia = w.bytes
        }
    }

    public init(campaign: Campaign) {
        self.campaign = campaign
        base = Rendering(campaign)
        var variants: [String: Rendering] = [:]
        for v in campaign.variants {
            variants[v.name] = Rendering(campaign.applying(v))
        }
        byVariant = variants

        var x = JSONWriter(capacity: 64)
        if !campaign.custom.isEmpty {
            x.raw(",\"x\":")
            x.value(.object(campaign.custom))
        }
        customTail = x.bytes

        if let sensitive = campaign.sensitive, !sensitive.isEmpty {
            var j = JSONWriter(capacity: 128)
            j.value(.object(sensitive))
            sensitiveJSON = j.bytes
        } else {
            sensitiveJSON = nil
        }
    }

    /// The rendering a delivery of `variant` gets (the campaign's own without
    /// one). A delivery always names a variant of the loaded campaign: the
    /// snapshot assigns from that list, and Sql/0009 refuses to rename or
    /// delete a variant once the audience is assigned.
    private func rendering(_ variant: String?) -> Rendering {
        variant.flatMap { byVariant[$0] } ?? base
    }

    /// The campaign as the devices of `variant` get it (the campaign itself for nil).
    public func campaign(variant: String?) -> Campaign {
        rendering(variant).campaign
    }

    fileprivate static func renderAPS(campaign: Campaign, text: LocalizedText) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.raw("{\"alert\":{")
        part(text.title, literal: "title", key: "title-loc-key", args: "title-loc-args", first: true, into: &w)
        if let subtitle = text.subtitle {
            part(subtitle, literal: "subtitle", key: "subtitle-loc-key", args: "subtitle-loc-args", first: false, into: &w)
        }
        part(text.body, literal: "body", key: "loc-key", args: "loc-args", first: false, into: &w)
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
        return w.bytes
    }

    /// One part of `aps.alert`: literal text, or a key of the app's strings and its arguments.
    private static func part(_ part: LocalizedText.Part, literal: String, key: String, args: String, first: Bool,
                             into w: inout JSONWriter) {
        if !first { w.raw(",") }
        switch part {
        case .text(let s):
            w.key(literal)
            w.string(s)
        case .key(let k, let list):
            w.key(key)
            w.string(k)
            if !list.isEmpty {
                w.raw(",")
                w.key(args)
                w.value(.array(list.map { .string($0) }))
            }
        }
    }

    /// The payload bytes for one device.
    public func payload(for target: DeliveryTarget, replyToken: String?, sealed: SealedEnvelope?) -> [UInt8] {
        let r = rendering(target.variant)
        return payload(r, locale: r.locales.best(for: target.locale), deliveryID: target.deliveryID,
                       replyToken: replyToken, sealed: sealed)
    }

    private func payload(_ r: Rendering, locale: String, deliveryID: Int64, replyToken: String?,
                         sealed: SealedEnvelope?) -> [UInt8] {
        let aps = r.apsByLocale[locale] ?? r.apsByLocale[campaign.defaultLocale] ?? []
        let kindAndMedia = r.kindAndMedia
        var w = JSONWriter(capacity: aps.count + kindAndMedia.count + customTail.count + 220)
        w.raw("{\"aps\":")
        w.raw(aps)
        w.raw(",\"herald\":{\"c\":")
        w.int(campaign.id)
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
        w.raw(customTail)
        w.raw("}}")
        return w.bytes
    }

    public func headers(for target: DeliveryTarget, topic: String) -> PushHeaders {
        PushHeaders(
            topic: topic, pushType: "alert", priority: campaign.priority,
            expiration: campaign.expiresAt.map { Int($0.timeIntervalSince1970) },
            collapseID: campaign.effectiveCollapseID, apnsID: target.apnsID)
    }

    /// The largest payload any device of this campaign can get, per content
    /// locale: the longest ids, a reply token and, when the campaign has
    /// sensitive fields, an envelope of the size their plaintext seals to.
    public func largestPayloads(variant: String? = nil) -> [(locale: String, bytes: Int)] {
        let r = rendering(variant)
        var envelope: SealedEnvelope?
        if let sensitiveJSON {
            let ctBytes = sensitiveJSON.count + HeraldUserInfo.tagByteCount
            envelope = SealedEnvelope(
                v: 1, kid: String(repeating: "k", count: DeviceKeyLimits.maxKeyIDBytes),
                enc: String(repeating: "A", count: 44),
                ct: String(repeating: "A", count: (ctBytes + 2) / 3 * 4))
        }
        return r.campaign.content.keys.sorted().map { locale in
            let bytes = payload(r, locale: locale, deliveryID: Int64.max,
                                replyToken: String(repeating: "A", count: 22), sealed: envelope)
            return (locale, bytes.count)
        }
    }
}

public enum DeviceKeyLimits {
    /// Longest key id a device may register (Sql: devices.key_id).
    public static let maxKeyIDBytes = 64
}
