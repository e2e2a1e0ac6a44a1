import Foundation

/// A recurring campaign's schedule (docs/marketers.md, "Recurring
/// campaigns"): its moments, numbered from 1, in wall-clock time. For a
/// series at a UTC time the wall clock is UTC; for one at `send_at_local`
/// it is the local time every user's zone reaches in turn (given here as
/// a `Date` read in UTC). The one authority for which moment comes when: the
/// database keeps each occurrence once, the run asks this which is due.
public struct Recurrence: Sendable, Hashable {
    public enum Unit: String, Sendable, Hashable, CaseIterable {
        case minute, hour, day, week, month
    }

    /// A day of the week, as `repeat_on` spells it.
    public enum Weekday: String, Sendable, Hashable, CaseIterable, Comparable {
        case mon, tue, wed, thu, fri, sat, sun

        /// Days after Monday.
        var offset: Int { Self.allCases.firstIndex(of: self)! }

        public static func < (a: Self, b: Self) -> Bool { a.offset < b.offset }
    }

    public var unit: Unit
    /// Every this many units (`repeat_every`).
    public var every: Int
    /// The first moment (`send_at`, or `send_at_local`); its time of day is
    /// every moment's.
    public var start: Date
    /// `repeat_on`: the weekly days; none means the start's day.
    public var weekdays: [Weekday]
    /// `repeat_day`: the monthly day (past a month's end: its last day);
    /// none means the start's day.
    public var dayOfMonth: Int?
    /// `repeat_count`: at most this many moments.
    public var count: Int?
    /// `repeat_until`, on the same wall clock: no moment after it.
    public var until: Date?

    public init(unit: Unit, every: Int = 1, start: Date, weekdays: [Weekday] = [], dayOfMonth: Int? = nil,
                count: Int? = nil, until: Date? = nil) {
        self.unit = unit
        self.every = max(every, 1)
        self.start = start
        self.weekdays = Array(Set(weekdays)).sorted()
        self.dayOfMonth = dayOfMonth
        self.count = count
        self.until = until
    }

    public struct Moment: Sendable, Hashable {
        public var number: Int
        public var at: Date

        public init(number: Int, at: Date) {
            self.number = number
            self.at = at
        }
    }

    /// The last moment at or before `t`, within the count and the end.
    public func latest(atOrBefore t: Date) -> Moment? {
        let bound = until.map { min($0, t) } ?? t
        var n = latestNumber(atOrBefore: bound)
        if let count { n = min(n, count) }
        return n >= 1 ? moment(n) : nil
    }

    /// The first moment after `t`, or nil once the schedule is over.
    public func next(after t: Date) -> Moment? {
        let n = latestNumber(atOrBefore: t) + 1
        if let count, n > count { return nil }
        let m = moment(n)
        if let until, m.at > until { return nil }
        return m
    }

    /// Moment `n` (from 1) of the unbounded schedule.
    public func moment(_ n: Int) -> Moment {
        switch unit {
        case .minute, .hour, .day:
            return Moment(number: n, at: start.addingTimeInterval(Double(n - 1) * step))
        case .week:
            let days = weekDays
            let first = days.filter { weekMoment(period: 0, day: $0) >= start }
            if n <= first.count { return Moment(number: n, at: weekMoment(period: 0, day: first[n - 1])) }
            let m = n - first.count - 1
            return Moment(number: n, at: weekMoment(period: 1 + m / days.count, day: days[m % days.count]))
        case .month:
            return Moment(number: n, at: monthMoment(period: n - (firstMonthCounts ? 1 : 0)))
        }
    }

    /// How many moments of the unbounded schedule come at or before `t`.
    func latestNumber(atOrBefore t: Date) -> Int {
        guard t >= start else { return 0 }
        switch unit {
        case .minute, .hour, .day:
            return Int((t.timeIntervalSince(start) / step).rounded(.down)) + 1
        case .week:
            let days = weekDays
            let period = Int((t.timeIntervalSince(weekStart) / (Double(every) * 7 * 86_400)).rounded(.down))
            let inFirst = days.filter { weekMoment(period: 0, day: $0) >= start }.count
            let here = days.filter { day in
                let at = weekMoment(period: period, day: day)
                return at <= t && at >= start
            }.count
            return period == 0 ? here : inFirst + (period - 1) * days.count + here
        case .month:
            let s = Self.calendar.dateComponents([.year, .month], from: start)
            let c = Self.calendar.dateComponents([.year, .month], from: t)
            var period = ((c.year! - s.year!) * 12 + (c.month! - s.month!)) / every
            if monthMoment(period: period) > t { period -= 1 }
            let n = period + (firstMonthCounts ? 1 : 0)
            return max(n, 0)
        }
    }

    private var step: TimeInterval {
        Double(every) * (unit == .minute ? 60 : unit == .hour ? 3_600 : 86_400)
    }

    private var weekDays: [Weekday] {
        if !weekdays.isEmpty { return weekdays }
        let weekday = Self.calendar.component(.weekday, from: start)  // 1 = Sunday
        return [Weekday.allCases[(weekday + 5) % 7]]
    }

    /// Midnight of the Monday of the start's week.
    private var weekStart: Date {
        let midnight = Self.calendar.startOfDay(for: start)
        let weekday = Self.calendar.component(.weekday, from: start)
        return midnight.addingTimeInterval(-Double((weekday + 5) % 7) * 86_400)
    }

    private var timeOfDay: TimeInterval { start.timeIntervalSince(Self.calendar.startOfDay(for: start)) }

    private func weekMoment(period: Int, day: Weekday) -> Date {
        weekStart.addingTimeInterval(Double(period * every * 7 + day.offset) * 86_400 + timeOfDay)
    }

    private func monthMoment(period: Int) -> Date {
        let s = Self.calendar.dateComponents([.year, .month, .day], from: start)
        let months = s.month! - 1 + period * every
        let year = s.year! + Int((Double(months) / 12).rounded(.down))
        let month = ((months % 12) + 12) % 12 + 1
        let first = Self.calendar.date(from: DateComponents(year: year, month: month, day: 1))!
        let length = Self.calendar.range(of: .day, in: .month, for: first)!.count
        let day = min(dayOfMonth ?? s.day!, length)
        return first.addingTimeInterval(Double(day - 1) * 86_400 + timeOfDay)
    }

    /// Whether the start's own month has a moment (a `repeat_day` before
    /// the start's day does not).
    private var firstMonthCounts: Bool { monthMoment(period: 0) >= start }

    static let calendar: Calendar = {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: "UTC")!
        return c
    }()

    /// "every 2 weeks on mon, thu", "every month on day 31": as a marketer reads it.
    public var description: String {
        var text = every == 1 ? "every \(unit.rawValue)" : "every \(every) \(unit.rawValue)s"
        if unit == .week { text += " on " + weekDays.map(\.rawValue).joined(separator: ", ") }
        if unit == .month { text += " on day \(dayOfMonth ?? Self.calendar.component(.day, from: start))" }
        if let count { text += ", \(count) time\(count == 1 ? "" : "s")" }
        if let until { text += ", until \(until.ISO8601Format())" }
        return text
    }
}
