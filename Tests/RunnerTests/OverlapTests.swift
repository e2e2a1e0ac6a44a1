import APNs
import Foundation
import HeraldCore
import PostgresNIO
@testable import Runner
import Store
import TestSupport
import Testing

/// Overlapping campaigns (DESIGN point 16) on plain values: the order they
/// start in, the run's limits shared between their sessions, and a session
/// keeping to its share.
@Suite("Overlapping campaigns: order and shared limits")
struct OverlapTests {
    static let total = SendLimits(concurrency: 200, repeatBound: 700, writeAt: 250)

    @Test("each session gets a max-min fair part of the run's limits, never more than the others leave (golden table)")
    func shareRule() {
        // (its demand, the others' demands, others in flight, others unrecorded) → (concurrency, repeat bound, write at)
        let table: [(Int, [Int], Int, Int, SendLimits)] = [
            (200, [], 0, 0, SendLimits(concurrency: 200, repeatBound: 700, writeAt: 250)),          // alone: the whole
            (200, [200], 0, 0, SendLimits(concurrency: 100, repeatBound: 350, writeAt: 125)),       // a fair half
            (200, [200], 200, 700, SendLimits(concurrency: 0, repeatBound: 0, writeAt: 125)),      // the other still holds all
            (200, [200], 150, 400, SendLimits(concurrency: 50, repeatBound: 300, writeAt: 125)),   // what the other left
            (200, [200, 200], 0, 0, SendLimits(concurrency: 67, repeatBound: 235, writeAt: 83)),   // thirds, rounded up
            (200, [20], 20, 60, SendLimits(concurrency: 180, repeatBound: 630, writeAt: 225)),     // beside a paced campaign
            (20, [200], 0, 0, SendLimits(concurrency: 20, repeatBound: 70, writeAt: 25)),          // the paced one: what it can use
            (200, [20, 200, 200], 60, 100, SendLimits(concurrency: 60, repeatBound: 210, writeAt: 75)), // (200-20)/3
        ]
        for (demand, others, inFlight, unrecorded, expected) in table {
            let got = RunShare.limits(total: Self.total, demand: demand, othersDemands: others,
                                      othersInFlight: inFlight, othersUnrecorded: unrecorded)
            #expect(got == expected, "demand \(demand) beside \(others), others \(inFlight) in flight, \(unrecorded) unrecorded")
        }
        // The parts of every session never exceed the whole by more than the rounding up.
        for demands in [[200, 200, 200], [20, 200, 200, 5], [1, 1, 200], [200, 150, 120, 90, 60]] {
            let parts = demands.indices.map { i in
                RunShare.fairShare(of: 200, demand: demands[i], othersDemands: demands.enumerated().filter { $0.offset != i }.map(\.element))
            }
            #expect(parts.reduce(0, +) <= 200 + demands.count - 1, "\(demands) → \(parts)")
            #expect(parts.allSatisfy { $0 >= 1 })
        }
        // A small total still gives every session room to send.
        let small = RunShare.limits(total: SendLimits(concurrency: 2, repeatBound: 3, writeAt: 1), demand: 2,
                                    othersDemands: [2, 2, 2], othersInFlight: 0, othersUnrecorded: 0)
        #expect(small.concurrency == 1 && small.repeatBound == 2 && small.writeAt == 1)
    }

    @Test("sessions joining and leaving the run's budget: together they never hold more than the run's limits")
    func budgetAcrossSessions() {
        let budget = RunBudget(total: Self.total)
        let a = budget.join(demand: 200)
        #expect(budget.limits(for: a, inFlight: 0, unrecorded: 0).concurrency == 200)
        // A holds its whole share when B joins: B gets nothing until A is back under its half.
        _ = budget.limits(for: a, inFlight: 200, unrecorded: 690)
        let b = budget.join(demand: 200)
        let bFirst = budget.limits(for: b, inFlight: 0, unrecorded: 0)
        #expect(bFirst.concurrency == 0 && bFirst.repeatBound == 10)
        let aNow = budget.limits(for: a, inFlight: 200, unrecorded: 690)
        #expect(aNow.concurrency == 100 && aNow.repeatBound == 350, "A's share is half now: it starts nothing until under it")
        _ = budget.limits(for: a, inFlight: 90, unrecorded: 300)
        let bLater = budget.limits(for: b, inFlight: 0, unrecorded: 0)
        #expect(bLater.concurrency == 100 && bLater.repeatBound == 350)
        // Whatever each takes within its limits, the sum stays within the run's.
        var held = (a: (90, 300), b: (0, 0))
        for step in 0..<50 {
            let la = budget.limits(for: a, inFlight: held.a.0, unrecorded: held.a.1)
            held.a = (min(la.concurrency, held.a.0 + step % 7), min(la.repeatBound, held.a.1 + step % 11))
            _ = budget.limits(for: a, inFlight: held.a.0, unrecorded: held.a.1)
            let lb = budget.limits(for: b, inFlight: held.b.0, unrecorded: held.b.1)
            held.b = (min(lb.concurrency, held.b.0 + step % 5), min(lb.repeatBound, held.b.1 + step % 13))
            _ = budget.limits(for: b, inFlight: held.b.0, unrecorded: held.b.1)
            #expect(held.a.0 + held.b.0 <= 200 && held.a.1 + held.b.1 <= 700)
        }
        budget.leave(a)
        #expect(budget.limits(for: b, inFlight: 0, unrecorded: 0) == Self.total, "alone again: the whole")
    }

    @Test("a session keeps to its share of the run's limits when it is smaller than its own settings")
    func sessionKeepsItsShare() {
        var s = SendingSessionTests.session(concurrency: 10, repeatBound: 20)
        var c = SendingSessionTests.at(0)
        c.share = SendLimits(concurrency: 2, repeatBound: 20, writeAt: 2)
        _ = s.next(c)
        s.claimAnswered(ClaimBatch(items: SendingSessionTests.rows(1...10), end: 10))
        var sent = 0
        for _ in 0..<6 where SendingSessionTests.name(s.next(c)).hasPrefix("send") { sent += 1 }
        #expect(sent == 2 && s.inFlight == 2)
        // No share at all (another session holds the run's limits): nothing starts.
        c.share = SendLimits(concurrency: 0, repeatBound: 0, writeAt: 1)
        for _ in 0..<3 { #expect(!SendingSessionTests.name(s.next(c)).hasPrefix("send")) }
        // A larger share: its own settings still bound it.
        c.share = SendLimits(concurrency: 100, repeatBound: 100, writeAt: 50)
        for _ in 0..<20 where SendingSessionTests.name(s.next(c)).hasPrefix("send") { sent += 1 }
        #expect(s.inFlight == 10)
    }

    @Test("due campaigns start time-sensitive first (a flash sale unless its row says otherwise), then by send_at, then id")
    func dueOrder() {
        let t = Date(timeIntervalSince1970: 1_800_000_000)
        let due = [
            DueCampaignHead(id: 1, kind: .poster, interruptionLevel: nil, sendAt: t),
            DueCampaignHead(id: 2, kind: .feedback, interruptionLevel: nil, sendAt: t.addingTimeInterval(-60)),
            DueCampaignHead(id: 3, kind: .flashSale, interruptionLevel: nil, sendAt: t.addingTimeInterval(60)),
            DueCampaignHead(id: 4, kind: .flashSale, interruptionLevel: "passive", sendAt: t.addingTimeInterval(-120)),
            DueCampaignHead(id: 5, kind: .poster, interruptionLevel: "critical", sendAt: t.addingTimeInterval(120)),
            DueCampaignHead(id: 6, kind: nil, interruptionLevel: "time-sensitive", sendAt: t),
            DueCampaignHead(id: 7, kind: .poster, interruptionLevel: nil, sendAt: t),
        ]
        #expect(DueOrder.sorted(due) == [3, 5, 4, 2, 1, 6, 7])
    }
}
