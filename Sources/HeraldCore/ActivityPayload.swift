import Foundation

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
