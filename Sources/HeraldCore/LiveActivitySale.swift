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
