import ExtensionKit
import Foundation
import HeraldCore
import Logging
import PostgresNIO
import Store

/// `herald preview CAMPAIGN`: what a run would do with one campaign, of any
/// status, without writing anything: its payload per locale, its audience
/// (the run's own snapshot statement, rolled back) and the problems a run
/// would fail it for.
public struct CampaignPreview: Sendable {
    /// One content locale's notification as a device of that locale (and
    /// of that variant, when the campaign has variants) gets it.
    public struct LocalePayload: Sendable {
        /// The campaign variant; nil for a campaign without variants.
        public var variant: String?
        public var locale: String
        /// The payload of one sample delivery (the per-device fields are samples).
        public var payload: [UInt8]
        /// The largest this locale's payload can get on any device (what the 4096-byte check uses).
        public var largestBytes: Int
        public var headers: [(name: String, value: String)]
    }

    public var campaignID: Int64
    public var name: String
    public var kind: String
    public var status: String
    public var sendAt: Date
    public var expiresAt: Date?
    public var segmentName: String?
    /// How fast it may go out (nil: as fast as APNs takes it).
    public var pace: CampaignPace?
    /// Whether it needs an approval and has one.
    public var approval: CampaignApproval?
    /// A recurring or on-entry campaign's schedule and occurrences, or the
    /// series an occurrence belongs to (`campaigns.series_id`).
    public var series: String?
    /// The apps it goes to, each with its topic (`apps`); the samples' headers are the first's.
    public var apps: [(name: String, topic: String)] = []
    /// The campaign's A/B variants in name order (the first is the baseline); empty when it has none.
    public var variants: [(name: String, share: Int)] = []
    /// Per variant, then per locale (one variant, nil, for a campaign without variants).
    public var locales: [LocalePayload]
    /// Nil when the audience cannot be selected (a broken segment rule).
    public var audience: SnapshotResult?
    /// Why a run would not send it; empty when it could go out.
    public var problems: [String]
    public var notes: [String]
    /// For a campaign whose texts hold templates: each device of the
    /// audience rendered as a run would (nil: it has none).
    public var personal: PersonalPreview?

    /// For a Live Activity sale: its steps as a run would send them (DESIGN, contract 10).
    public struct ActivityStepPreview: Sendable {
        public var step: Int
        public var event: String
        public var at: Date
        public var priority: Int
        public var expiresAt: Date
        /// What the lock screen shows then (`price €39, stockLeft from sale_stock`).
        public var state: String
        public var alerts: Bool
    }

    /// For a Live Activity sale: its steps; empty for any other campaign.
    public var activitySteps: [ActivityStepPreview] = []
    /// For a Live Activity sale: the start's payload as a device with a push-to-start token gets it.
    public var activityStart: [UInt8] = []

    public var canGoOut: Bool { problems.isEmpty }

    /// The fields of `herald` that exist per delivery only.
    public static let perDeviceFields = ["herald.d", "herald.r", "herald.sealed", "apns-id"]

    /// Builds the preview of campaign `id`. Throws `StoreError.notFound` for an unknown campaign.
    public static func make(stores: RunStores, campaign id: Int64, topic: String) async throws -> CampaignPreview {
        try await make(stores: stores, campaign: id, apps: .single(topic: topic))
    }

    /// Builds the preview of campaign `id`, its apps' topics from `routes`
    /// (a run's own, read from the database).
    public static func make(stores: RunStores, campaign id: Int64, apps routes: AppRoutes) async throws -> CampaignPreview {
        // A row a run could not read throws here, naming the bad column (a run fails the campaign for it).
        let due = try await stores.campaigns.loadCampaign(id)
        let c = due.campaign
        let status = try await stores.campaigns.storedStatus(id) ?? c.status.rawValue
        let approval = try await stores.campaigns.approval(id)
        var preview = CampaignPreview(
            campaignID: c.id, name: c.name, kind: c.kind.rawValue, status: status, sendAt: c.sendAt,
            expiresAt: c.expiresAt, segmentName: due.segmentName, pace: c.pace, approval: approval,
            locales: [], audience: nil, problems: [], notes: [])
        if let approval, !approval.allowsSending {
            preview.problems.append("it is not approved: \(approval.description)")
        }
        switch status {
        case "draft":
            preview.notes.append("a draft: a run sends it once its status is 'scheduled' and send_at has come")
        case "scheduled", "running":
            break
        case "paused":
            preview.notes.append("paused: a run sends it once it is resumed ('running')")
        default:
            preview.problems.append("the campaign is \(status); a run sends only scheduled or running campaigns")
        }
        if let expires = c.expiresAt, expires <= Date() {
            preview.problems.append("the campaign expired at \(iso(expires)); a run completes it without sending")
        } else if c.sendAt > Date() {
            preview.notes.append("send_at \(iso(c.sendAt)) is in the future; the audience below is who would get it now")
        }
        if let (series, now) = try await stores.series.series(id) {
            preview.series = seriesLine(series, now: now)
            preview.notes.append("a series is never sent itself: each run makes its due occurrence, a campaign of its own; the audience below is who an occurrence made now would reach")
        } else if let (series, occurrence) = due.series {
            preview.series = "occurrence #\(occurrence) of campaign \(series)"
        }
        if preview.series == nil, status == "running" || status == "paused" {
            preview.notes.append("its audience was snapshotted when it started: the figures below count only devices not in its ledger yet")
        }

        let names = try await stores.campaigns.apps(id) ?? routes.routes.keys.sorted()
        preview.apps = names.map { ($0, routes.topic(app: $0)) }
        let topic = preview.apps.first?.topic ?? routes.defaultTopic
        preview.variants = c.variants.map { ($0.name, $0.share) }
        // The checks a run makes before touching any device.
        var plan: (any CampaignPlan)?
        do {
            plan = try PlanChoice.standard.plan(for: due)
        } catch {
            preview.problems.append(error.message)
        }
        let prepared = plan?.prepared
        let builder = prepared?.builder ?? (try? PayloadBuilder(campaign: c))
        let variants: [String?] = c.variants.isEmpty ? [nil] : c.variants.map(\.name)
        for variant in variants {
            let largest = Dictionary((builder?.largestPayloads(variant: variant) ?? []).map { ($0.locale, $0.bytes) },
                                     uniquingKeysWith: { a, _ in a })
            if let prepared {
                preview.locales += samplePayloads(prepared, variant: variant, topic: topic, largest: largest)
            } else {
                let text = variant.flatMap { v in c.variants.first { $0.name == v } }.map { c.applying($0) } ?? c
                preview.locales += text.content.keys.sorted().map {
                    LocalePayload(variant: variant, locale: $0, payload: [], largestBytes: largest[$0] ?? 0, headers: [])
                }
            }
        }

        try await plan?.preview(into: &preview, apps: names, routes: routes, stores: stores)

        // The audience, with the run's statement in a transaction rolled back
        // (and, for templates, each of its devices rendered inside it).
        do {
            if let prepared, !prepared.builder.variables.isEmpty {
                var personal = PersonalPreview()
                preview.audience = try await stores.audience.previewSnapshot(due, variables: prepared.builder.variables) {
                    personal.add($0, builder: prepared.builder)
                }
                preview.personal = personal
            } else {
                preview.audience = try await stores.audience.previewSnapshot(due)
            }
        } catch let problem as CampaignProblem {
            if !preview.problems.contains(problem.message) { preview.problems.append(problem.message) }
        }
        return preview
    }

    /// "every day at UTC; next 2026-12-02T09:00:00Z, …; 3 occurrences so far".
    static func seriesLine(_ series: Series, now: Date) -> String {
        let made = series.lastOccurrence == 0 ? "no occurrence yet" : "latest occurrence #\(series.lastOccurrence)"
        switch series.schedule {
        case .recurring(let recurrence, let local):
            let shift = local ? Series.earliestZone : 0
            var bounded = recurrence
            bounded.until = recurrence.until.map { $0.addingTimeInterval(shift) }
            var next: [String] = []
            var after = now.addingTimeInterval(shift)
            while next.count < 3, let m = bounded.next(after: after) {
                next.append(local ? "#\(m.number) \(iso(m.at).dropLast()) local" : "#\(m.number) \(iso(m.at))")
                after = m.at
            }
            return "recurring \(recurrence.description) (\(local ? "each user's local time" : "UTC")); "
                + (next.isEmpty ? "no moment left" : "next: " + next.joined(separator: ", ")) + "; \(made)"
        case .onEntry(let resendAfter):
            let again = resendAfter.map { "again after \(CampaignPace.words($0))" } ?? "once"
            return "sent on segment entry, to each user \(again); \(made)"
        }
    }

    /// Each locale's payload for a sample device of that locale and
    /// variant, through the run's own builder and personalizer; the reply
    /// token and envelope are made with a throwaway secret and device key.
    static func samplePayloads(_ prepared: PreparedCampaign, variant: String?, topic: String,
                               largest: [String: Int]) -> [LocalePayload] {
        let personalizer = ReplyLoopPersonalizer(tokens: ReplyTokens(secret: .generate()))
        let key = DeviceKeyPair.generate()
        return prepared.builder.campaign(variant: variant).content.keys.sorted().map { locale in
            let target = DeliveryTarget(deliveryID: 1, deviceToken: String(repeating: "0", count: 64),
                                        environment: .production, locale: locale,
                                        publicKey: key.publicKeyBase64, keyID: key.keyID, variant: variant)
            let headers = prepared.builder.headers(for: target, topic: topic).fields
            let parts = try? prepared.builder.parts(for: target)
            switch personalizer.extras(for: prepared, target: target, sealing: parts?.sensitive) {
            case .success(let extras) where parts != nil:
                let payload = parts.map { prepared.builder.payload($0, for: target, replyToken: extras.replyToken, sealed: extras.sealed) } ?? []
                return LocalePayload(variant: variant, locale: locale, payload: payload,
                                     largestBytes: largest[locale] ?? payload.count, headers: headers)
            default:
                return LocalePayload(variant: variant, locale: locale, payload: [], largestBytes: largest[locale] ?? 0,
                                     headers: headers)
            }
        }
    }

    static func iso(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// The preview for a person.
    public var text: String {
        var lines: [String] = []
        lines.append("campaign \(campaignID) \"\(name)\" [\(kind)], status \(status), send_at \(Self.iso(sendAt))"
                     + (expiresAt.map { ", expires_at \(Self.iso($0))" } ?? ""))
        lines.append("segment: \(segmentName ?? "(everyone)")")
        if apps.count > 1 || apps.first.map({ $0.name != AppRecord.defaultName }) == true {
            lines.append("apps: " + apps.map { "\($0.name) (\($0.topic))" }.joined(separator: ", ")
                         + (apps.count > 1 ? "; each device with its own app's topic (the samples show the first's)" : ""))
        }
        if let approval { lines.append("approval: \(approval.description)") }
        if let series { lines.append("series: \(series)") }
        for note in notes { lines.append("note: \(note)") }
        if !variants.isEmpty {
            lines.append("variants (A/B; each device gets one, the first is the baseline): "
                         + variants.map { "\($0.name) \($0.share)%" }.joined(separator: ", "))
        }
        var shownVariant: String?
        for l in locales {
            if let v = l.variant, v != shownVariant {
                shownVariant = v
                lines.append("")
                lines.append("== variant \(v)")
            }
            lines.append("")
            lines.append("\(l.variant.map { "variant \($0), " } ?? "")locale \(l.locale): \(l.payload.count) bytes for this sample device; at most \(l.largestBytes) of \(PayloadBuilder.maxBytes) on any device")
            for h in l.headers {
                lines.append("  \(h.name): \(h.value)" + (h.name == "apns-id" ? "   (per device)" : ""))
            }
            if !l.payload.isEmpty {
                lines.append("  payload: \(String(decoding: l.payload, as: UTF8.self))")
            }
        }
        if !locales.isEmpty {
            lines.append("  (per device: herald.d is the delivery id, herald.r its reply token, herald.sealed the sensitive fields sealed to that device's key, apns-id its own; the values above are samples)")
        }
        if !activitySteps.isEmpty {
            lines.append("")
            lines.append("Live Activity: \(activitySteps.count) steps (the start by push-to-start, each update, the end)")
            for s in activitySteps {
                lines.append("  step \(s.step) \(s.event) at \(Self.iso(s.at)), priority \(s.priority)\(s.alerts ? " (alerts)" : ""), apns-expiration \(Self.iso(s.expiresAt)): \(s.state)")
            }
            lines.append("  start payload (push-to-start): \(String(decoding: activityStart, as: UTF8.self))")
        }
        lines.append("")
        if let a = audience {
            let passed = a.skipped - a.skippedNoKey - a.skippedCapped
            lines.append("audience now: \(a.inserted) devices: \(a.queued) would be queued (\(a.deferred) of them deferred by quiet hours or their local time), \(a.skipped) skipped (\(a.skippedNoKey) no key for the sealed fields, \(a.skippedCapped) frequency cap\(passed > 0 ? ", \(passed) whose local time had passed" : ""))\(a.heldOut > 0 ? ", \(a.heldOut) held out (never sent, to measure lift)" : "")")
            for v in variants {
                let n = a.variants.first { $0.name == v.name }
                lines.append("  variant \(v.name) (\(v.share)%): \(n?.devices ?? 0) devices, \(n?.queued ?? 0) would be queued")
            }
        } else {
            lines.append("audience: cannot be selected")
        }
        if let personal {
            lines += personal.lines
        }
        if let pace, let a = audience {
            let rate = pace.ratePerMinute(audience: a.queued)
            lines.append("pace: \(pace): \(a.queued) notifications take about \(CampaignPace.words(pace.duration(audience: a.queued))) at \(Int(rate)) a minute, spread evenly")
        }
        if problems.isEmpty {
            lines.append("ready: a run could send this campaign")
        } else {
            lines.append("PROBLEMS (a run would fail the campaign or not send it):")
            for p in problems { lines.append("  - \(p)") }
        }
        return lines.joined(separator: "\n")
    }

    /// The preview for machines: one JSON object.
    public var json: [UInt8] {
        var w = JSONWriter(capacity: 4096)
        w.value(jsonValue)
        w.raw("\n")
        return w.bytes
    }

    /// The preview as one JSON value (`json`'s).
    var jsonValue: JSONValue {
        func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
        func int(_ value: Int) -> JSONValue { .int(Int64(value)) }
        var object: [String: JSONValue] = [
            "campaign": .int(campaignID), "name": .string(name), "kind": .string(kind), "status": .string(status),
            "send_at": .string(Self.iso(sendAt)), "expires_at": text(expiresAt.map(Self.iso)), "segment": text(segmentName),
            "apps": .array(apps.map { .object(["name": .string($0.name), "topic": .string($0.topic)]) }),
            "can_go_out": .bool(canGoOut),
            "problems": .array(problems.map { .string($0) }), "notes": .array(notes.map { .string($0) }),
            "per_device_fields": .array(Self.perDeviceFields.map { .string($0) }),
            "series": text(series), "personal": personal?.json ?? .null,
        ]
        if !activitySteps.isEmpty {
            object["live_activity_steps"] = .array(activitySteps.map { s in
                .object(["step": int(s.step), "event": .string(s.event), "at": .string(Self.iso(s.at)),
                         "priority": int(s.priority), "expires_at": .string(Self.iso(s.expiresAt)),
                         "state": .string(s.state), "alerts": .bool(s.alerts)])
            })
        }
        object["variants"] = .array(variants.map { v in
            var entry: [String: JSONValue] = ["name": .string(v.name), "share_pct": int(v.share)]
            if let a = audience {
                let n = a.variants.first { $0.name == v.name }
                entry["devices"] = int(n?.devices ?? 0)
                entry["queued"] = int(n?.queued ?? 0)
            }
            return .object(entry)
        })
        object["locales"] = .array(locales.map { l in
            .object([
                "variant": text(l.variant), "locale": .string(l.locale), "bytes": int(l.payload.count),
                "largest_bytes": int(l.largestBytes), "max_bytes": int(PayloadBuilder.maxBytes),
                "headers": .object(Dictionary(l.headers.map { ($0.name, JSONValue.string($0.value)) }, uniquingKeysWith: { $1 })),
                // The payload as it goes out, read back: a builder's payload is always JSON.
                "payload": l.payload.isEmpty ? .null : (try? StrictJSON.parse(l.payload)) ?? .null,
            ])
        })
        object["approval"] = approval.map { a in
            .object(["required": .bool(a.required), "author": .string(a.author), "approved_by": text(a.approvedBy)])
        } ?? .null
        if let pace, let a = audience {
            object["pace"] = .object(["notifications_per_minute": int(Int(pace.ratePerMinute(audience: a.queued))),
                                      "seconds": int(Int(pace.duration(audience: a.queued).rounded()))])
        } else {
            object["pace"] = .null
        }
        object["audience"] = audience.map { a in
            .object(["devices": int(a.inserted), "queued": int(a.queued), "deferred_by_quiet_hours": int(a.deferred),
                     "skipped": int(a.skipped), "skipped_no_key": int(a.skippedNoKey),
                     "skipped_frequency_cap": int(a.skippedCapped), "held_out": int(a.heldOut)])
        } ?? .null
        return .object(object)
    }
}

/// Text made for each person, as a preview shows it: a few devices of each
/// content locale with their own text, how many devices each skip reason
/// would remove, and the largest payload made for one device.
public struct PersonalPreview: Sendable {
    public struct Sample: Sendable {
        public var locale: String
        public var user: String
        public var title: String
        public var body: String
    }

    /// Devices rendered (the would-be queued audience).
    public var rendered = 0
    /// Up to `samplesPerLocale` per content locale, in the ledger's order.
    public var samples: [Sample] = []
    /// Skip reason (without the payload's own size) → devices.
    public var skips: [String: Int] = [:]
    public var largest: (bytes: Int, user: String)?
    static let samplesPerLocale = 3

    mutating func add(_ s: DeliveryLedger.PersonalSample, builder: PayloadBuilder) {
        rendered += 1
        let target = DeliveryTarget(deliveryID: s.deliveryID, deviceToken: String(repeating: "0", count: 64),
                                    environment: .production, locale: s.locale, variant: s.variant, personal: s.values)
        let parts: PayloadBuilder.Parts
        do {
            parts = try builder.parts(for: target)
        } catch {
            skips[error.description, default: 0] += 1
            return
        }
        let sealed = parts.sensitive.map { PayloadBuilder.envelope(sealing: $0.count) }
        let payload = builder.payload(parts, for: target, replyToken: String(repeating: "A", count: 22), sealed: sealed)
        if payload.count > PayloadBuilder.maxBytes {
            skips[PayloadBuilder.tooLarge, default: 0] += 1
            return
        }
        if payload.count > largest?.bytes ?? 0 { largest = (payload.count, s.user) }
        let locale = builder.campaign(variant: s.variant).contentLocale(for: s.locale)
        guard samples.filter({ $0.locale == locale }).count < Self.samplesPerLocale,
              let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any],
              let alert = (object["aps"] as? [String: Any])?["alert"] as? [String: Any] else { return }
        samples.append(Sample(locale: locale, user: s.user, title: alert["title"] as? String ?? alert["title-loc-key"] as? String ?? "",
                              body: alert["body"] as? String ?? alert["loc-key"] as? String ?? ""))
    }

    var lines: [String] {
        var out = ["text made for each person: \(rendered) devices of the audience rendered as a run would"]
        for s in samples.sorted(by: { $0.locale < $1.locale }) {
            out.append("  \(s.locale), user \(s.user): \"\(s.title)\" / \"\(s.body)\"")
        }
        for (reason, n) in skips.sorted(by: { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }) {
            out.append("  would skip \(n) device\(n == 1 ? "" : "s"): \(reason)")
        }
        if let largest {
            out.append("  largest payload made for one device: \(largest.bytes) of \(PayloadBuilder.maxBytes) bytes (user \(largest.user))")
        }
        return out
    }

    var json: JSONValue {
        .object([
            "rendered": .int(Int64(rendered)),
            "samples": .array(samples.map {
                .object(["locale": .string($0.locale), "user": .string($0.user), "title": .string($0.title), "body": .string($0.body)])
            }),
            "skips": .object(skips.mapValues { .int(Int64($0)) }),
            "largest_bytes": largest.map { .int(Int64($0.bytes)) } ?? .null,
            "largest_user": largest.map { .string($0.user) } ?? .null,
        ])
    }
}
