import Foundation
import HeraldCore
import Testing

@Suite("Recurring schedules and series steps")
struct RecurrenceTests {
    /// "2026-12-01 09:00" read in UTC.
    static func at(_ text: String) -> Date {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd HH:mm"
        return f.date(from: text)!
    }

    static func moments(_ r: Recurrence, _ n: Int) -> [Date] { (1...n).map { r.moment($0).at } }

    @Test func fixedSteps() {
        let r = Recurrence(unit: .minute, every: 15, start: Self.at("2026-12-01 09:00"))
        #expect(Self.moments(r, 3) == [Self.at("2026-12-01 09:00"), Self.at("2026-12-01 09:15"), Self.at("2026-12-01 09:30")])
        #expect(r.latest(atOrBefore: Self.at("2026-12-01 09:29"))?.number == 2)
        #expect(r.latest(atOrBefore: Self.at("2026-12-01 08:59")) == nil)
        #expect(r.next(after: Self.at("2026-12-01 09:15"))?.at == Self.at("2026-12-01 09:30"))
        let daily = Recurrence(unit: .day, start: Self.at("2026-12-30 09:00"))
        #expect(daily.moment(3).at == Self.at("2027-01-01 09:00"))
        let hours = Recurrence(unit: .hour, every: 6, start: Self.at("2026-12-01 00:00"))
        #expect(hours.latest(atOrBefore: Self.at("2026-12-02 05:59"))?.number == 5)
    }

    @Test func weeklyOnDays() {
        // 2026-12-02 is a Wednesday; Monday and Thursday every second week.
        let r = Recurrence(unit: .week, every: 2, start: Self.at("2026-12-02 09:00"), weekdays: [.thu, .mon])
        let expected = ["2026-12-03 09:00", "2026-12-14 09:00", "2026-12-17 09:00", "2026-12-28 09:00"].map(Self.at)
        #expect(Self.moments(r, 4) == expected)
        for (i, moment) in expected.enumerated() {
            #expect(r.latest(atOrBefore: moment)?.number == i + 1)
            #expect(r.latest(atOrBefore: moment.addingTimeInterval(-60))?.number == (i == 0 ? nil : i))
        }
        // The week between (an odd one) has none.
        #expect(r.latest(atOrBefore: Self.at("2026-12-10 12:00"))?.number == 1)
        // No days: the start's own weekday.
        let plain = Recurrence(unit: .week, start: Self.at("2026-12-02 09:00"))
        #expect(plain.moment(2).at == Self.at("2026-12-09 09:00"))
    }

    @Test func monthlyClampsToTheMonthsEnd() {
        let r = Recurrence(unit: .month, start: Self.at("2026-12-31 20:00"))
        #expect(Self.moments(r, 4) == ["2026-12-31 20:00", "2027-01-31 20:00", "2027-02-28 20:00", "2027-03-31 20:00"].map(Self.at))
        #expect(r.latest(atOrBefore: Self.at("2027-03-01 00:00"))?.number == 3)
        // A day before the start's day: the start's month has none, the
        // months counted from it do.
        let monthly = Recurrence(unit: .month, start: Self.at("2026-12-15 09:00"), dayOfMonth: 1)
        #expect(Self.moments(monthly, 2) == ["2027-01-01 09:00", "2027-02-01 09:00"].map(Self.at))
        let quarterly = Recurrence(unit: .month, every: 3, start: Self.at("2026-12-15 09:00"), dayOfMonth: 1)
        #expect(Self.moments(quarterly, 2) == ["2027-03-01 09:00", "2027-06-01 09:00"].map(Self.at))
        #expect(quarterly.latest(atOrBefore: Self.at("2027-02-28 00:00")) == nil)
        #expect(quarterly.latest(atOrBefore: Self.at("2027-07-01 00:00"))?.number == 2)
    }

    @Test func countAndUntilEndTheSchedule() {
        let r = Recurrence(unit: .day, start: Self.at("2026-12-01 09:00"), count: 3)
        #expect(r.latest(atOrBefore: Self.at("2027-06-01 00:00"))?.number == 3)
        #expect(r.next(after: Self.at("2026-12-02 10:00"))?.number == 3)
        #expect(r.next(after: Self.at("2026-12-03 10:00")) == nil)
        let u = Recurrence(unit: .day, start: Self.at("2026-12-01 09:00"), until: Self.at("2026-12-03 08:00"))
        #expect(u.latest(atOrBefore: Self.at("2026-12-05 00:00"))?.number == 2)
        #expect(u.next(after: Self.at("2026-12-02 09:00")) == nil)
    }

    @Test func aSeriesMakesItsLatestMomentOnce() {
        let r = Recurrence(unit: .hour, start: Self.at("2026-12-01 09:00"))
        var s = Series(id: 1, schedule: .recurring(r, local: false), sendAt: r.start)
        #expect(s.step(now: Self.at("2026-12-01 08:59")) == Series.Step())
        let first = s.step(now: Self.at("2026-12-01 09:00"))
        #expect(first.make == .init(number: 1, at: Self.at("2026-12-01 09:00")))
        s.lastOccurrence = 1
        // Seen again within the hour: nothing.
        #expect(s.step(now: Self.at("2026-12-01 09:59")) == Series.Step())
        // Three hours on: the latest is made, the two before it are skipped.
        #expect(s.step(now: Self.at("2026-12-01 12:10")) == Series.Step(make: .init(number: 4, at: Self.at("2026-12-01 12:00")), skipped: 2))
    }

    @Test func aResumedSeriesContinuesWithTheNextMoment() {
        let r = Recurrence(unit: .day, start: Self.at("2026-12-01 09:00"))
        let s = Series(id: 1, schedule: .recurring(r, local: false), sendAt: r.start,
                       resumedAt: Self.at("2026-12-03 10:00"), lastOccurrence: 1)
        #expect(s.step(now: Self.at("2026-12-03 10:05")) == Series.Step(skipped: 2))
        #expect(s.step(now: Self.at("2026-12-04 09:00")).make?.number == 4)
    }

    @Test func anExpiredMomentIsSkipped() {
        let r = Recurrence(unit: .day, start: Self.at("2026-12-01 09:00"))
        let s = Series(id: 1, schedule: .recurring(r, local: false), sendAt: r.start,
                       expiresAt: Self.at("2026-12-01 11:00"))
        #expect(s.step(now: Self.at("2026-12-01 10:59")).make?.number == 1)
        #expect(s.step(now: Self.at("2026-12-01 11:00")) == Series.Step(skipped: 1))
    }

    @Test func aLocalSeriesIsDueWhenTheFirstZoneReachesItsMoment() {
        let r = Recurrence(unit: .day, start: Self.at("2026-12-01 09:00"), count: 2)
        let s = Series(id: 1, schedule: .recurring(r, local: true), sendAt: Self.at("2026-11-30 19:00"))
        // 09:00 at UTC+14 is 19:00 UTC the day before.
        #expect(s.step(now: Self.at("2026-11-30 18:59")).make == nil)
        #expect(s.step(now: Self.at("2026-11-30 19:00")).make == .init(number: 1, at: Self.at("2026-12-01 09:00")))
        var last = s
        last.lastOccurrence = 1
        let second = last.step(now: Self.at("2026-12-01 19:00"))
        #expect(second == Series.Step(make: .init(number: 2, at: Self.at("2026-12-02 09:00")), complete: true))
    }

    @Test func onEntryIsOneOpenOccurrenceOrOnePerPeriod() {
        let start = Self.at("2026-12-01 00:00")
        let once = Series(id: 1, schedule: .onEntry(resendAfter: nil), sendAt: start)
        #expect(once.step(now: start.addingTimeInterval(-1)) == Series.Step())
        #expect(once.step(now: Self.at("2026-12-09 00:00")).make == .init(number: 1, at: start, openUntil: nil))
        let weekly = Series(id: 1, schedule: .onEntry(resendAfter: 7 * 86_400), sendAt: start,
                            expiresAt: Self.at("2026-12-20 00:00"), lastOccurrence: 1)
        #expect(weekly.step(now: Self.at("2026-12-09 00:00")).make
                == .init(number: 2, at: Self.at("2026-12-08 00:00"), openUntil: Self.at("2026-12-15 00:00")))
        #expect(weekly.step(now: Self.at("2026-12-16 00:00")).make?.openUntil == Self.at("2026-12-20 00:00"))
        #expect(weekly.step(now: Self.at("2026-12-20 00:00")) == Series.Step(complete: true))
    }
}
