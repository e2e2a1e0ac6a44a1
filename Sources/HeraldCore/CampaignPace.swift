import Foundation

/// How fast a campaign may go out (docs/marketers.md, "Pace"): at most so
/// many notifications a minute, or as fast as finishing within a time needs.
/// The run takes evenly spaced send slots from the database (`herald_pace_reserve`), so
/// the pace holds across every worker and survives kills and restarts.
public enum CampaignPace: Sendable, Hashable, CustomStringConvertible {
    /// `rate_per_minute`.
    case perMinute(Int)
    /// `finish_within`, in seconds, counted from the first send.
    case within(TimeInterval)

    /// How long sending `audience` notifications takes at this pace.
    public func duration(audience: Int) -> TimeInterval {
        switch self {
        case .perMinute(let rate): Double(max(audience - 1, 0)) * 60 / Double(rate)
        case .within(let seconds): audience > 0 ? seconds : 0
        }
    }

    /// Notifications a minute at this pace for `audience` (finish_within
    /// spreads it over the window, at least one a minute).
    public func ratePerMinute(audience: Int) -> Double {
        switch self {
        case .perMinute(let rate): Double(rate)
        case .within(let seconds): max(1, (Double(audience) / (seconds / 60)).rounded(.up))
        }
    }

    public var description: String {
        switch self {
        case .perMinute(let rate): "at most \(rate) a minute"
        case .within(let seconds): "within \(Self.words(seconds))"
        }
    }

    /// "2 h 30 min", "45 s": a duration as a marketer reads it.
    public static func words(_ seconds: TimeInterval) -> String {
        let total = Int(seconds.rounded())
        let (days, hours, minutes, secs) = (total / 86_400, total % 86_400 / 3_600, total % 3_600 / 60, total % 60)
        var parts: [String] = []
        if days > 0 { parts.append("\(days) d") }
        if hours > 0 { parts.append("\(hours) h") }
        if minutes > 0 { parts.append("\(minutes) min") }
        if secs > 0 || parts.isEmpty { parts.append("\(secs) s") }
        return parts.prefix(2).joined(separator: " ")
    }
}
