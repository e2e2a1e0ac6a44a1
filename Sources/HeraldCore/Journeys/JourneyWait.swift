import Foundation

/// What a `wait` step waits for (`journey_steps.wait_for`, `wait_until`, `best_hour`).
public enum JourneyWait: Sendable, Hashable {
    /// A duration from when the member reached the step.
    case duration(TimeInterval)
    /// The next time the user's clock shows this time of day (hour 0–23, minute 0–59).
    case localTime(hour: Int, minute: Int)
    /// The next start of the user's best hour; no wait for a user who has none.
    case bestHour

    /// When a member who reached the step at `reached` may go on, in the user's zone; nil: at once.
    public func end(reached: Date, zone: TimeZone, bestHour: Int?) -> Date? {
        switch self {
        case .duration(let seconds):
            return reached.addingTimeInterval(seconds)
        case .localTime(let hour, let minute):
            return Self.next(hour: hour, minute: minute, after: reached, zone: zone)
        case .bestHour:
            return bestHour.map { Self.next(hour: $0, minute: 0, after: reached, zone: zone) }
        }
    }

    /// The first moment strictly after `after` at which `zone`'s clock shows `hour:minute`.
    static func next(hour: Int, minute: Int, after: Date, zone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let wanted = DateComponents(hour: hour, minute: minute, second: 0)
        return calendar.nextDate(after: after, matching: wanted, matchingPolicy: .nextTime) ?? after.addingTimeInterval(86_400)
    }
}
