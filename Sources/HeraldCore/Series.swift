import Foundation

/// What a run does with one series (a recurring campaign, or one sent on
/// segment entry) at a moment: the pure decision, driven by `SeriesStore`.
public struct Series: Sendable, Hashable {
    public enum Schedule: Sendable, Hashable {
        /// `local`: the recurrence's wall clock is each user's (`send_at_local`).
        case recurring(Recurrence, local: Bool)
        /// `resendAfter`: a user may have it again after this long (each
        /// period is an occurrence of its own); nil: once per user.
        case onEntry(resendAfter: TimeInterval?)
    }

    public var id: Int64
    public var schedule: Schedule
    /// `send_at`: for an on-entry series, when it starts taking entrants.
    public var sendAt: Date
    /// `expires_at`: a recurring series' occurrences each expire this long
    /// after their own send time; an on-entry series ends then.
    public var expiresAt: Date?
    /// When it was last resumed: a recurring moment before is skipped.
    public var resumedAt: Date?
    /// The highest occurrence made so far.
    public var lastOccurrence: Int

    public init(id: Int64, schedule: Schedule, sendAt: Date, expiresAt: Date? = nil, resumedAt: Date? = nil,
                lastOccurrence: Int = 0) {
        self.id = id
        self.schedule = schedule
        self.sendAt = sendAt
        self.expiresAt = expiresAt
        self.resumedAt = resumedAt
        self.lastOccurrence = lastOccurrence
    }

    /// The earliest zone (UTC+14) reaches a wall-clock time this long before UTC does.
    public static let earliestZone: TimeInterval = 14 * 3_600

    /// An occurrence to make: its number, its moment (UTC; for a local
    /// series, the wall clock read as UTC) and, on entry, until when it
    /// takes entrants (nil: for as long as the series).
    public struct Occurrence: Sendable, Hashable {
        public var number: Int
        public var at: Date
        public var openUntil: Date?

        public init(number: Int, at: Date, openUntil: Date? = nil) {
            self.number = number
            self.at = at
            self.openUntil = openUntil
        }
    }

    public struct Step: Sendable, Hashable {
        /// The occurrence to make now, if any.
        public var make: Occurrence?
        /// Moments passed that will not be made (paused, or overtaken by a later one).
        public var skipped = 0
        /// The series is over: no moment remains.
        public var complete = false

        public init(make: Occurrence? = nil, skipped: Int = 0, complete: Bool = false) {
            self.make = make
            self.skipped = skipped
            self.complete = complete
        }
    }

    /// What is due at `now`. A recurring series makes only its latest moment
    /// at or before now (earlier ones not yet made are skipped, not made up),
    /// and not one before it was resumed or whose expiry window has passed.
    public func step(now: Date) -> Step {
        var step = Step()
        switch schedule {
        case .recurring(let recurrence, let local):
            let shift = local ? Self.earliestZone : 0
            let wallNow = now.addingTimeInterval(shift)
            var bounded = recurrence
            bounded.until = recurrence.until.map { $0.addingTimeInterval(shift) }
            if let latest = bounded.latest(atOrBefore: wallNow), latest.number > lastOccurrence {
                let instant = latest.at.addingTimeInterval(-shift)
                let window = expiresAt.map { $0.timeIntervalSince(sendAt) }
                let resumed = resumedAt.map { instant >= $0 } ?? true
                let live = window.map { instant.addingTimeInterval($0) > now } ?? true
                if resumed && live {
                    step.make = Occurrence(number: latest.number, at: latest.at)
                    step.skipped = latest.number - lastOccurrence - 1
                } else {
                    step.skipped = latest.number - lastOccurrence
                }
            }
            step.complete = bounded.next(after: wallNow) == nil
        case .onEntry(let resendAfter):
            if let expiresAt, expiresAt <= now {
                step.complete = true
                return step
            }
            guard now >= sendAt else { return step }
            let number: Int
            var at = sendAt
            var openUntil = expiresAt
            if let period = resendAfter {
                number = Int((now.timeIntervalSince(sendAt) / period).rounded(.down)) + 1
                at = sendAt.addingTimeInterval(Double(number - 1) * period)
                let end = at.addingTimeInterval(period)
                openUntil = expiresAt.map { min($0, end) } ?? end
            } else {
                number = 1
            }
            if number > lastOccurrence { step.make = Occurrence(number: number, at: at, openUntil: openUntil) }
        }
        return step
    }
}
