@testable import APNs
import Testing

/// The client-wide connection budget on plain values: pools are names.
@Suite("Connection budget decisions")
struct ConnectionBudgetTests {
    typealias Budget = ConnectionBudget<String>
    typealias Candidate = Budget.Candidate

    @Test("pools open connections while the budget lasts; then they wait, and the total never exceeds it")
    func withinBudget() {
        var budget = Budget(limit: 2)
        let r1 = budget.acquire("A")
        #expect(r1)
        let r2 = budget.acquire("B")
        #expect(r2)
        let r3 = budget.acquire("C")
        #expect(!r3)
        let r4 = budget.acquire("C")
        #expect(!r4)  // asking again does not queue twice
        #expect(budget.total == 2 && budget.waiting == ["C"])
        // A connection of A closes: C gets the slot.
        let r5 = budget.released("A", reclaimed: false)
        #expect(r5 == "C")
        #expect(budget.total == 2 && budget.peak == 2 && budget.waiting.isEmpty)
        #expect(budget.connections(of: "C") == 1 && budget.connections(of: "A") == 0)
        // Nobody waits: the slot stays free.
        let r6 = budget.released("B", reclaimed: false)
        #expect(r6 == nil)
        #expect(budget.total == 1)
    }

    @Test("an idle connection of another pool is closed for a waiting pool, from the pool with the most connections")
    func idleFirst() {
        var budget = Budget(limit: 3)
        let r7 = budget.acquire("A")
        let r8 = budget.acquire("A")
        let r9 = budget.acquire("B")
        #expect(r7 && r8 && r9)
        let r10 = budget.acquire("C")
        #expect(!r10)
        let reclaims = budget.reclaims(candidates: [
            Candidate(pool: "A", connections: 2, idle: 1, retirable: 2),
            Candidate(pool: "B", connections: 1, idle: 1, retirable: 1),
        ])
        #expect(reclaims == [.closeIdle("A")])
        // Under way: asking again reclaims nothing more.
        let r11 = budget.reclaims(candidates: [Candidate(pool: "B", connections: 1, idle: 1, retirable: 1)])
        #expect(r11.isEmpty)
        let r12 = budget.released("A", reclaimed: true)
        #expect(r12 == "C")
        #expect(budget.reclaiming == 0 && budget.total == 3)
    }

    @Test("a pool with no connection gets a busy one retired for it; a pool that has one waits for an idle one")
    func retireOnlyForPoolsWithout() {
        var budget = Budget(limit: 2)
        let r13 = budget.acquire("A")
        let r14 = budget.acquire("B")
        #expect(r13 && r14)
        // B wants a second connection: nothing idle, B has one, so nothing is retired for it.
        let r15 = budget.acquire("B")
        #expect(!r15)
        let busy = [
            Candidate(pool: "A", connections: 1, idle: 0, retirable: 1),
            Candidate(pool: "B", connections: 1, idle: 0, retirable: 1),
        ]
        let r16 = budget.reclaims(candidates: busy)
        #expect(r16.isEmpty)
        // C has none: the first to be served, by retiring a connection of the other pools (not its own).
        let r17 = budget.acquire("C")
        #expect(!r17)
        let reclaims = budget.reclaims(candidates: busy + [Candidate(pool: "C", connections: 0, idle: 0, retirable: 0)])
        #expect(reclaims.count == 1)
        guard case .retire(let victim)? = reclaims.first else {
            Issue.record("nothing retired")
            return
        }
        #expect(victim == "A" || victim == "B")
        // The freed slot goes to C (no connection) before B (asked first, has one).
        let r18 = budget.released(victim, reclaimed: true)
        #expect(r18 == "C")
        #expect(budget.waiting == ["B"])
    }

    @Test("a connection that may not be retired yet (served too briefly) is left alone until it may")
    func minimumHold() {
        var budget = Budget(limit: 1)
        let r19 = budget.acquire("A")
        #expect(r19)
        let r20 = budget.acquire("B")
        #expect(!r20)
        let r21 = budget.reclaims(candidates: [Candidate(pool: "A", connections: 1, idle: 0, retirable: 0)])
        #expect(r21.isEmpty)
        let r22 = budget.reclaims(candidates: [Candidate(pool: "A", connections: 1, idle: 0, retirable: 1)])
        #expect(r22 == [.retire("A")])
        // A reclaim that found nothing to close is given up, and can be chosen again.
        budget.reclaimAbandoned()
        let r23 = budget.reclaims(candidates: [Candidate(pool: "A", connections: 1, idle: 1, retirable: 1)])
        #expect(r23 == [.closeIdle("A")])
    }

    @Test("a pool that no longer needs its granted slot gives it on to the next")
    func slotPassedOn() {
        var budget = Budget(limit: 1)
        let r24 = budget.acquire("A")
        #expect(r24)
        let r25 = budget.acquire("B")
        #expect(!r25)
        let r26 = budget.acquire("C")
        #expect(!r26)
        let r27 = budget.released("A", reclaimed: false)
        #expect(r27 == "B")
        // B's requests timed out meanwhile: it gives the slot back, C gets it.
        let r28 = budget.released("B", reclaimed: false)
        #expect(r28 == "C")
        #expect(budget.total == 1 && budget.peak == 1)
    }
}
