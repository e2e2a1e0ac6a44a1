import Foundation

/// A flash sale run as a Live Activity (DESIGN, "Contract 11 — Live Activities"): the sale as the
/// marketer wrote it (`campaigns.live_activity`), the steps it makes, and each step's payload and
/// headers. Pure values: the run sends the steps.
public struct LiveActivitySale: Sendable, Hashable {
    /// The `ActivityAttributes` type every app declares for Herald's sales (ExtensionKit's
    /// `HeraldSaleAttributes`), named by push-to-start.
    public static let attributesType = "HeraldSaleAttributes"

    /// The content state's fields and their JSON types, as the app decodes them (ExtensionKit's
    /// `HeraldSaleAttributes.ContentState`). Any other key, or another type, would make the app's
    /// decoding fail, and the device would drop the update without a word: refused when written.
    public enum Field: String, CaseIterable, Sendable {
        case headline, price, wasPrice, stockLeft
        var isText: Bool { self != .stockLeft }
    }

    public struct Update: Sendable, Hashable {
        public var at: Date
        /// Fields that change at this step (`.null`: removed); the others keep their value.
        public var state: [Field: JSONValue]
        /// An alert with the update (priority 10), keyed by locale as the campaign's content.
        public var alert: [String: LocalizedText]?

        public init(at: Date, state: [Field: JSONValue], alert: [String: LocalizedText]? = nil) {
            self.at = at
            self.state = state
            self.alert = alert
        }
    }

    /// The attributes (static for the activity's life): `title`, and the campaign's id added by Herald.
    public var title: String
    /// The content state at the start.
    public var state: [Field: JSONValue]
    public var updates: [Update]
    /// How long the ended activity stays on the lock screen (`dismissal-date` = end + this).
    public var dismissAfter: Duration
    /// `relevance-score` of every step (nil: none; then the system orders by start).
    public var relevance: Double?
    /// Read `stockLeft` from `sale_stock` at each update (the marketer's system writes it).
    public var stockFromTable: Bool
    /// Updates and the end go once to a broadcast channel of the sale's own (iOS 18).
    public var channel: Bool

    /// The steps of a sale that starts at `start` and ends at `end`: 0 is the start, then one per
    /// update in time order, and the last is the end. Each step carries the whole state.
    public func steps(start: Date, end: Date) -> [ActivityStep] {
        var state = self.state
        var out = [ActivityStep(number: 0, event: .start, at: start, state: state, alert: nil)]
        for update in updates {
            for (field, value) in update.state { state[field] = value == .null ? nil : value }
            out.append(ActivityStep(number: out.count, event: .update, at: update.at, state: state, alert: update.alert))
        }
        out.append(ActivityStep(number: out.count, event: .end, at: end, state: state, alert: nil))
        return out
    }

    /// Reads `campaigns.live_activity`; the error names the field and what is wrong.
    /// `sendAt`/`expiresAt` bound the updates: strictly after the start, strictly before the end.
    public init(json: JSONValue, sendAt: Date, expiresAt: Date?) throws(CampaignProblem) {
        func fail(_ message: String) -> CampaignProblem { CampaignProblem("live_activity\(message)") }
        guard case .object(let fields) = json else { throw fail(": must be an object") }
        let known: Set<String> = ["title", "state", "updates", "dismiss_after", "relevance", "stock", "channel"]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw fail(" has \"\(unknown)\"; use title, state, updates, dismiss_after, relevance, stock or channel")
        }
        guard let expiresAt else { throw fail(": a Live Activity needs expires_at (the sale's end)") }
        guard let title = fields["title"]?.stringValue, !title.isEmpty else { throw fail(".title: must be a non-empty text") }
        self.title = title
        state = try Self.state(fields["state"], at: ".state", whole: true)
        var updates: [Update] = []
        var previous = sendAt
        if fields["updates"] != nil, fields["updates"]?.arrayValue == nil { throw fail(".updates: must be an array") }
        for (index, entry) in (fields["updates"]?.arrayValue ?? []).enumerated() {
            let at = ".updates[\(index)]"
            guard case .object(let update) = entry else { throw fail("\(at): must be an object with \"at\" and \"state\"") }
            if let unknown = update.keys.sorted().first(where: { !["at", "state", "alert"].contains($0) }) {
                throw fail("\(at) has \"\(unknown)\"; use at, state or alert")
            }
            guard let text = update["at"]?.stringValue, let time = Self.timestamp(text) else {
                throw fail("\(at).at: must be a time with its zone, such as 2026-12-06T18:30:00Z")
            }
            guard time > previous else {
                throw fail("\(at).at: must come after \(index == 0 ? "the sale's send_at" : "the update before it")")
            }
            guard time < expiresAt else { throw fail("\(at).at: must come before the sale's end (expires_at)") }
            previous = time
            let changes = try Self.state(update["state"], at: "\(at).state", whole: false)
            var alert: [String: LocalizedText]?
            if let value = update["alert"] {
                guard case .object(let locales) = value, !locales.isEmpty else {
                    throw fail("\(at).alert: must be an object of locales, such as {\"en\": {\"title\": …, \"body\": …}}")
                }
                var texts: [String: LocalizedText] = [:]
                for (locale, entry) in locales {
                    do throws(CampaignProblem) { texts[locale] = try LocalizedText(json: entry) } catch {
                        throw fail("\(at).alert.\(locale): \(error.message)")
                    }
                }
                alert = texts
            }
            updates.append(Update(at: time, state: changes, alert: alert))
        }
        self.updates = updates
        switch fields["dismiss_after"] {
        case nil: dismissAfter = .seconds(15 * 60)
        case .int(let seconds)? where (0...4 * 3600).contains(seconds): dismissAfter = .seconds(seconds)
        default: throw fail(".dismiss_after: must be whole seconds from 0 to 14400 (the system removes an ended activity after 4 hours)")
        }
        switch fields["relevance"] {
        case nil: relevance = nil
        case .int(let value)? where value >= 0: relevance = Double(value)
        case .double(let value)? where value >= 0: relevance = value
        default: throw fail(".relevance: must be a number of at least 0")
        }
        switch fields["stock"] {
        case nil, .bool(false)?: stockFromTable = false
        case .bool(true)?: stockFromTable = true
        default: throw fail(".stock: must be true (read stockLeft from sale_stock at each step) or false")
        }
        switch fields["channel"] {
        case nil, .bool(false)?: channel = false
        case .bool(true)?: channel = true
        default: throw fail(".channel: must be true (updates go once to a broadcast channel) or false")
        }
    }

    public init(title: String, state: [Field: JSONValue], updates: [Update] = [], dismissAfter: Duration = .seconds(900),
                relevance: Double? = nil, stockFromTable: Bool = false, channel: Bool = false) {
        self.title = title
        self.state = state
        self.updates = updates
        self.dismissAfter = dismissAfter
        self.relevance = relevance
        self.stockFromTable = stockFromTable
        self.channel = channel
    }

    private static func state(_ value: JSONValue?, at path: String, whole: Bool) throws(CampaignProblem) -> [Field: JSONValue] {
        guard case .object(let fields)? = value else {
            throw CampaignProblem("live_activity\(path): must be an object of headline, price, wasPrice or stockLeft")
        }
        var out: [Field: JSONValue] = [:]
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard let field = Field(rawValue: name) else {
                throw CampaignProblem("live_activity\(path) has \"\(name)\"; the app's content state has headline, price, wasPrice and stockLeft")
            }
            switch (field.isText, value) {
            case (true, .string(let text)) where !text.isEmpty: out[field] = value
            case (false, .int(let n)) where n >= 0: out[field] = value
            // A null removes the field from the state at this step.
            case (_, .null) where field == .wasPrice || field == .stockLeft: if !whole { out[field] = .null }
            default:
                throw CampaignProblem("live_activity\(path).\(name): must be \(field.isText ? "a non-empty text" : "a whole number of at least 0")")
            }
        }
        if whole {
            for field in [Field.headline, .price] where out[field] == nil {
                throw CampaignProblem("live_activity\(path): needs \"\(field.rawValue)\"")
            }
        }
        return out
    }

    static func timestamp(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}

public enum ActivityEvent: String, Sendable, Hashable {
    case start, update, end
}

/// One step of a sale: what every device's activity shows from `at` on.
public struct ActivityStep: Sendable, Hashable {
    public var number: Int
    public var event: ActivityEvent
    /// When the step falls due (its `timestamp` is the send's time within its window, `timestamp(_:now:)`).
    public var at: Date
    public var state: [LiveActivitySale.Field: JSONValue]
    /// Only updates have their own alert; the start's is the campaign's content.
    public var alert: [String: LocalizedText]?
}

/// A broadcast channel's id, as Apple defines it: a base64-encoded string of no stated size.
/// The one rule for the run, the app-facing endpoint and the simulator.
public enum ChannelID {
    /// Padded base64 of any length: what a device can subscribe to and a header can carry.
    public static func isUsable(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count % 4 == 0 && Data(base64Encoded: text) != nil
    }

    /// Its first characters, to name it in a message (an id is no secret, but may be long).
    public static func excerpt(_ text: String) -> String {
        let head = text.unicodeScalars.prefix(12).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? String($0) : "?" }.joined()
        return text.unicodeScalars.count > 12 ? "\"\(head)…\"" : "\"\(head)\""
    }
}

/// One broadcast channel of a sale: it belongs to one app's bundle in one APNs environment.
public struct ChannelKey: Sendable, Hashable, Comparable {
    public var app: String
    public var environment: APNsEnvironment

    public init(app: String, environment: APNsEnvironment) {
        self.app = app
        self.environment = environment
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.app, a.environment.rawValue) < (b.app, b.environment.rawValue)
    }
}

/// How a step reaches a device.
public enum ActivityAddress: Sendable, Hashable {
    /// Push-to-start to the device's push-to-start token; the activity then registers its own
    /// update token (`input-push-token`).
    case startByToken
    /// Push-to-start whose activity subscribes to a broadcast channel (`input-push-channel`).
    case startOnChannel(String)
    /// An update or the end to one activity's update token, or to a channel.
    case activity
}

/// The payload and headers of a step (DESIGN, "Contract 11").
public struct ActivityPayload: Sendable {
    public let sale: LiveActivitySale
    public let campaign: Campaign
    public let steps: [ActivityStep]

    public init(sale: LiveActivitySale, campaign: Campaign) throws(CampaignProblem) {
        guard let end = campaign.expiresAt else { throw CampaignProblem("live_activity: a Live Activity needs expires_at (the sale's end)") }
        self.sale = sale
        self.campaign = campaign
        self.steps = sale.steps(start: campaign.sendAt, end: end)
    }

    public var end: Date { steps[steps.count - 1].at }
    public var dismissal: Date { end.addingTimeInterval(Double(sale.dismissAfter.components.seconds)) }

    /// Priority 10 for the start (it alerts: push-to-start must), for an update with an alert and
    /// for the end (the countdown must stop when the sale does, not when the device next wakes);
    /// 5 for silent updates, which do not spend the device's budget of frequent updates.
    public func priority(_ step: ActivityStep) -> Int {
        switch step.event {
        case .start, .end: 10
        case .update: step.alert == nil ? 5 : 10
        }
    }

    /// `apns-expiration`: an update is worth delivering until the next step replaces it; the start
    /// until the sale ends; the end until the activity is dismissed anyway.
    public func expiration(_ step: ActivityStep) -> Date {
        switch step.event {
        case .start: end
        case .update: staleDate(step)
        case .end: dismissal
        }
    }

    /// When what a step shows is out of date: when the step after it falls due.
    public func staleDate(_ step: ActivityStep) -> Date {
        steps[min(step.number + 1, steps.count - 1)].at
    }

    /// The step whose state is current at `now`: the newest due before the end (the start before any).
    public func current(at now: Date) -> ActivityStep {
        steps.dropLast().last { $0.at <= now } ?? steps[0]
    }

    /// The push-to-start of a device reached at `now`: the start, with the state and `timestamp`
    /// of the step current then (a device started late shows what the others show).
    public func start(at now: Date) -> ActivityStep {
        var step = current(at: now)
        step.event = .start
        step.alert = nil
        return step
    }

    /// The step's content state, with the campaign, the step's number and the sale's end, as the
    /// app decodes it. `stockLeft` (when the sale reads it) replaces the step's own.
    public func contentState(_ step: ActivityStep, stockLeft: Int? = nil, into w: inout JSONWriter) {
        w.raw("{")
        w.key("campaign"); w.int(campaign.id)
        w.raw(","); w.key("step"); w.int(Int64(step.number))
        w.raw(","); w.key("endsAt"); w.int(Int64(end.timeIntervalSince1970))
        for field in LiveActivitySale.Field.allCases {
            var value = step.state[field]
            if field == .stockLeft, let stockLeft { value = .int(Int64(stockLeft)) }
            guard let value else { continue }
            w.raw(","); w.key(field.rawValue); w.value(value)
        }
        w.raw("}")
    }

    /// A push's `timestamp`, which Apple defines as the time the payload's data was made (a device
    /// ignores a push older than what it shows): the send's time, held within the step's window,
    /// from its own time to a second before the next step's. So a repeat or a late send is as new
    /// as the state it carries, and a step sent after the next one fell due (a run frozen past its
    /// lease) is still older than the next step's push, which the device keeps.
    public func timestamp(_ step: ActivityStep, now: Date) -> Date {
        let from = max(now, step.at)
        guard step.event != .end, step.number + 1 < steps.count else { return from }
        return min(from, steps[step.number + 1].at.addingTimeInterval(-1))
    }

    /// The whole payload of `step` for a device in `locale`, sent at `now`.
    public func payload(_ step: ActivityStep, address: ActivityAddress, locale: String, stockLeft: Int? = nil,
                        now: Date = Date()) -> [UInt8] {
        var w = JSONWriter(capacity: 512)
        w.raw("{\"aps\":{\"timestamp\":"); w.int(Int64(timestamp(step, now: now).timeIntervalSince1970))
        w.raw(",\"event\":"); w.string(step.event.rawValue)
        w.raw(",\"content-state\":"); contentState(step, stockLeft: stockLeft, into: &w)
        if step.event != .end {
            w.raw(",\"stale-date\":"); w.int(Int64(staleDate(step).timeIntervalSince1970))
        } else {
            w.raw(",\"dismissal-date\":"); w.int(Int64(dismissal.timeIntervalSince1970))
        }
        if let relevance = sale.relevance { w.raw(",\"relevance-score\":"); w.double(relevance) }
        let alert: LocalizedText? = switch step.event {
        case .start: Self.text(campaign.content, locale: locale, default: campaign.defaultLocale)
        case .update: step.alert.flatMap { Self.text($0, locale: locale, default: campaign.defaultLocale) }
        case .end: nil
        }
        if let alert {
            w.raw(",\"alert\":{")
            Self.part(alert.title, literal: "title", key: "title-loc-key", args: "title-loc-args", into: &w)
            w.raw(",")
            Self.part(alert.body, literal: "body", key: "loc-key", args: "loc-args", into: &w)
            w.raw(",\"sound\":"); w.string(campaign.sound ?? "default")
            w.raw("}")
        }
        if step.event == .start {
            w.raw(",\"attributes-type\":"); w.string(LiveActivitySale.attributesType)
            w.raw(",\"attributes\":{\"campaign\":"); w.int(campaign.id)
            w.raw(",\"title\":"); w.string(sale.title)
            // The app registers the channel its activity listens on (it learns no update token).
            if case .startOnChannel(let channel) = address { w.raw(",\"channel\":"); w.string(channel) }
            w.raw("}")
            switch address {
            case .startOnChannel(let channel): w.raw(",\"input-push-channel\":"); w.string(channel)
            case .startByToken, .activity: w.raw(",\"input-push-token\":1")
            }
        }
        w.raw("}}")
        return w.bytes
    }

    private static func text(_ texts: [String: LocalizedText], locale: String, default defaultKey: String) -> LocalizedText? {
        guard !texts.isEmpty else { return nil }
        let key = LocaleMatch.best(for: locale, among: texts.keys, default: defaultKey)
        return texts[key] ?? texts[texts.keys.sorted()[0]]
    }

    private static func part(_ part: LocalizedText.Part, literal: String, key: String, args: String, into w: inout JSONWriter) {
        switch part {
        case .text(let text):
            w.key(literal); w.string(text)
        case .key(let name, let values):
            w.key(key); w.string(name)
            w.raw(","); w.key(args); w.value(.array(values.map { .string($0) }))
        }
    }
}

/// The APNs topic of each push type beside the app's own (`<bundle>.push-type.<type>`).
public enum PushTopic {
    public static func liveActivity(_ bundle: String) -> String { bundle + ".push-type.liveactivity" }
    public static func widgets(_ bundle: String) -> String { bundle + ".push-type.widgets" }
    public static func controls(_ bundle: String) -> String { bundle + ".push-type.controls" }
}
