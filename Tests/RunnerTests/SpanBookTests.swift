import Foundation
import HeraldCore
@testable import Runner
import Store
import Testing

/// What a sending session's writes settle of its spans, on plain values (`SpanBook`;
/// docs/DESIGN.md, "The ledger by ranges"): every outcome handed over is durable once its
/// write commits, no row reads sent without a 200, and a kill repeats only what the session
/// counted unrecorded.
@Suite("Span settlements")
struct SpanBookTests {
    static func outcome(_ id: Int64, _ status: DeliveryOutcome.Status) -> DeliveryOutcome {
        DeliveryOutcome(deliveryID: id, deviceID: id * 10, status: status, error: status == .sent ? nil : "answer")
    }

    @Test("answers in order: the watermark passes the 200s, and only the refusal is written")
    func inOrder() {
        var book = SpanBook()
        let span = SpanClaim(campaign: 7, after: 100, through: 107)
        book.add(span, rows: [101, 102, 104, 107].map { SpanRow(id: $0, deviceID: $0 * 10) })
        let (settlements, rows) = book.settle([Self.outcome(101, .sent), Self.outcome(102, .failed), Self.outcome(104, .sent)])
        #expect(rows.isEmpty)
        #expect(settlements == [SpanSettlement(span: span, settled: 104, exceptions: [Self.outcome(102, .failed)])])
        let last = book.settle([Self.outcome(107, .sent)])
        #expect(last.settlements == [SpanSettlement(span: span, settled: 107)])
        #expect(book.open == 0)
    }

    @Test("a row still in flight behind the highest answer is written in_flight; its answer goes row by row")
    func straggler() {
        var book = SpanBook()
        let span = SpanClaim(campaign: 7, after: 0, through: 3)
        book.add(span, rows: [1, 2, 3].map { SpanRow(id: $0, deviceID: $0 * 10) })
        let first = book.settle([Self.outcome(2, .sent)])
        #expect(first.settlements.count == 1)
        #expect(first.settlements[0].settled == 2 && first.settlements[0].stragglers.map(\.id) == [1])
        #expect(first.settlements[0].stragglers.map(\.deviceID) == [10])
        let second = book.settle([Self.outcome(1, .sent), Self.outcome(3, .retry)])
        #expect(second.rows == [Self.outcome(1, .sent)], "the straggler's answer is a row write")
        #expect(second.settlements == [SpanSettlement(span: span, settled: 3, exceptions: [Self.outcome(3, .retry)])])
    }

    @Test("outcomes of rows claimed row by row pass through untouched, beside a span's")
    func rowPathPassesThrough() {
        var book = SpanBook()
        let span = SpanClaim(campaign: 7, after: 10, through: 12)
        book.add(span, rows: [SpanRow(id: 11, deviceID: 1), SpanRow(id: 12, deviceID: 2)])
        let (settlements, rows) = book.settle([Self.outcome(5, .sent), Self.outcome(11, .sent), Self.outcome(6, .invalid)])
        #expect(rows == [Self.outcome(5, .sent), Self.outcome(6, .invalid)])
        #expect(settlements == [SpanSettlement(span: span, settled: 11)])
    }

    /// The ledger as herald_settle leaves it, in memory: each row's written status (nil: a
    /// batch row) and each span's watermark.
    struct Ledger {
        var written: [Int64: DeliveryOutcome.Status?] = [:]
        var stragglers: Set<Int64> = []
        var settled: [Int64: Int64] = [:]

        mutating func apply(_ settlements: [SpanSettlement], rows: [DeliveryOutcome]) {
            for s in settlements {
                settled[s.span.through] = max(settled[s.span.through] ?? s.span.after, s.settled)
                for e in s.exceptions { written[e.deliveryID] = e.status }
                for st in s.stragglers { stragglers.insert(st.id) }
            }
            for o in rows where stragglers.remove(o.deliveryID) != nil { written[o.deliveryID] = o.status }
        }

        /// What a run taking over after a kill sends again: batch rows above their span's
        /// watermark, and stragglers never answered in the ledger.
        func resent(_ spans: [(SpanClaim, [Int64])]) -> Set<Int64> {
            var out = stragglers
            for (span, ids) in spans {
                let mark = settled[span.through] ?? span.after
                for id in ids where id > mark && written[id] == nil { out.insert(id) }
            }
            return out
        }
    }

    @Test("a seeded simulation: random answer orders, refusals and kills; nothing reads sent without a 200, and a kill repeats at most what was unrecorded", arguments: 1...40)
    func simulation(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed))
        var book = SpanBook()
        var ledger = Ledger()
        // Three spans of 40 rows with gaps in their ids (rows written row by row between them).
        var spans: [(SpanClaim, [Int64])] = []
        var order: [Int64] = []
        var after: Int64 = 0
        for _ in 0..<3 {
            var ids: [Int64] = []
            var id = after
            for _ in 0..<40 {
                id += 1 + Int64(random.next() % 3)
                ids.append(id)
            }
            let span = SpanClaim(campaign: 1, after: after, through: id)
            spans.append((span, ids))
            book.add(span, rows: ids.map { SpanRow(id: $0, deviceID: $0) })
            order += ids
            after = id
        }
        let window = 1 + Int(random.next() % 12), writeAt = 1 + Int(random.next() % 15)
        let killAt = Int(random.next() % 160)
        var next = 0, step = 0
        var inFlight: [Int64] = []
        var pending: [DeliveryOutcome] = []
        var accepted: Set<Int64> = []
        var answers: [Int64: DeliveryOutcome.Status] = [:]
        while step < killAt, next < order.count || !inFlight.isEmpty || !pending.isEmpty {
            step += 1
            let draw = random.next() % 3
            if draw == 0, next < order.count, inFlight.count < window {
                inFlight.append(order[next])
                next += 1
            } else if draw == 1, !inFlight.isEmpty {
                let id = inFlight.remove(at: Int(random.next() % UInt64(inFlight.count)))
                let roll = random.nextUnit()
                let status: DeliveryOutcome.Status = roll < 0.85 ? .sent : roll < 0.92 ? .retry : roll < 0.96 ? .invalid : .failed
                if status == .sent { accepted.insert(id) }
                answers[id] = status
                pending.append(Self.outcome(id, status))
            } else if !pending.isEmpty, pending.count >= writeAt || next == order.count {
                let (settlements, rows) = book.settle(pending)
                ledger.apply(settlements, rows: rows)
                pending.removeAll()
                // Every row at or below a watermark is answered in the ledger, a straggler, or was a 200.
                for (span, ids) in spans {
                    let mark = ledger.settled[span.through] ?? span.after
                    for id in ids where id <= mark {
                        let stored = ledger.written[id] ?? nil
                        #expect(stored != nil || ledger.stragglers.contains(id) || answers[id] == .sent,
                                "seed \(seed): row \(id) below the watermark without a 200")
                        if stored == nil, !ledger.stragglers.contains(id) {
                            #expect(accepted.contains(id), "seed \(seed): row \(id) reads sent without a 200")
                        }
                    }
                }
            }
        }
        // Killed here: what a takeover sends again that APNs had taken is at most what the
        // session counted unrecorded (in flight, and answered but not yet written).
        let repeated = ledger.resent(spans).intersection(accepted)
        let unrecorded = inFlight.count + pending.count
        #expect(repeated.count <= unrecorded, "seed \(seed): \(repeated.count) repeats, \(unrecorded) unrecorded")
        // No outcome written is lost: each written answer is the one APNs gave.
        for (id, status) in ledger.written {
            #expect(status == answers[id], "seed \(seed): row \(id)")
        }
    }
}
