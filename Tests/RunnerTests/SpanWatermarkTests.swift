import Foundation
import HeraldCore
@testable import Runner
import Store
import Testing

/// The span's watermark, settlements and stragglers on plain values
/// (docs/DESIGN.md, "The ledger by ranges: spans and settlements"): the
/// rules its proof rests on, checked step by step under every order of
/// answers, failed writes and kills a seeded simulation produces.
@Suite("The span's watermark")
struct SpanWatermarkTests {
    static let t0 = ContinuousClock.now

    static func failed(_ id: Int64) -> SpanWatermark.Answer {
        .exception(DeliveryOutcome(deliveryID: id, deviceID: id, status: .failed, error: "BadDeviceToken"))
    }

    @Test("answers in order: each settlement passes the 200s and writes only the row that differs")
    func inOrder() throws {
        var span = SpanWatermark(after: 100, rows: [101, 102, 104, 107])
        for _ in 0..<4 { _ = span.send(at: Self.t0) }
        #expect(span.unresolved == 4)
        span.answered(101, .accepted)
        span.answered(102, Self.failed(102))
        span.answered(104, .accepted)
        let sProposed = span.settlement(at: Self.t0, straggleAfter: .seconds(1), pressure: false)
        let s = try #require(sProposed)
        #expect(s.settled == 104 && s.exceptions.map(\.deliveryID) == [102] && s.stragglers.isEmpty)
        // One settlement at a time.
        let none = span.settlement(at: Self.t0, straggleAfter: .seconds(1), pressure: false)
        #expect(none == nil)
        span.committed(s)
        #expect(span.settled == 104 && span.unresolved == 1)
        span.answered(107, .accepted)
        let lastProposed = span.settlement(at: Self.t0, straggleAfter: .seconds(1), pressure: false)
        let last = try #require(lastProposed)
        #expect(last.settled == 107 && last.isEmpty)
        span.committed(last)
        #expect(span.isDone && span.resentByATakeover.isEmpty)
    }

    @Test("a row in flight holds the watermark until it straggles: then it is written in_flight and the watermark passes it")
    func straggler() throws {
        var span = SpanWatermark(after: 0, rows: [1, 2, 3])
        for _ in 0..<3 { _ = span.send(at: Self.t0) }
        span.answered(2, .accepted)
        span.answered(3, Self.failed(3))
        // Not long enough: the watermark stays before row 1, but row 3's refusal is written now.
        let earlyProposed = span.settlement(at: Self.t0 + .milliseconds(100), straggleAfter: .milliseconds(250), pressure: false)
        let early = try #require(earlyProposed)
        #expect(early.settled == 0 && early.stragglers.isEmpty && early.exceptions.map(\.deliveryID) == [3])
        span.committed(early)
        #expect(span.unresolved == 2)
        // Long enough: row 1 straggles, the watermark passes 1 and 2.
        let lateProposed = span.settlement(at: Self.t0 + .milliseconds(300), straggleAfter: .milliseconds(250), pressure: false)
        let late = try #require(lateProposed)
        #expect(late.settled == 3 && late.stragglers == [1] && late.exceptions.isEmpty)
        span.committed(late)
        #expect(span.unresolved == 1 && span.resentByATakeover == [1])
        // Its 200 is written row by row, as sent.
        span.answered(1, .accepted)
        let answerProposed = span.settlement(at: Self.t0 + .milliseconds(400), straggleAfter: .milliseconds(250), pressure: false)
        let answer = try #require(answerProposed)
        #expect(answer.exceptions.map(\.deliveryID) == [1] && answer.exceptions.first?.status == .sent)
        span.committed(answer)
        #expect(span.isDone)
    }

    @Test("under pressure a row in flight straggles at once")
    func pressure() throws {
        var span = SpanWatermark(after: 0, rows: [1, 2])
        _ = span.send(at: Self.t0)
        _ = span.send(at: Self.t0)
        span.answered(2, .accepted)
        let sProposed = span.settlement(at: Self.t0, straggleAfter: .seconds(60), pressure: true)
        let s = try #require(sProposed)
        #expect(s.stragglers == [1] && s.settled == 2)
    }

    @Test("a write that fails leaves everything it carried pending, and the next proposes it again")
    func abandoned() throws {
        var span = SpanWatermark(after: 0, rows: [1, 2, 3])
        for _ in 0..<3 { _ = span.send(at: Self.t0) }
        span.answered(2, Self.failed(2))
        span.answered(3, .accepted)
        let sProposed = span.settlement(at: Self.t0 + .seconds(1), straggleAfter: .milliseconds(250), pressure: false)
        let s = try #require(sProposed)
        #expect(s.stragglers == [1] && s.exceptions.map(\.deliveryID) == [2] && s.settled == 3)
        span.answered(1, .accepted)  // while the write was under way
        span.abandoned(s)
        #expect(span.settled == 0 && span.unresolved == 3 && span.resentByATakeover == [1, 2, 3])
        let againProposed = span.settlement(at: Self.t0 + .seconds(1), straggleAfter: .milliseconds(250), pressure: false)
        let again = try #require(againProposed)
        #expect(again.settled == 3 && again.stragglers.isEmpty && again.exceptions.map(\.deliveryID) == [2])
        span.committed(again)
        #expect(span.isDone)
    }

    /// The ledger as the settlements committed it: rows written with their
    /// own status, and each span's watermark.
    struct Ledger {
        var rowStatus: [Int64: String] = [:]
        var settled: [Int: Int64] = [:]

        mutating func apply(_ s: SpanWatermark.Settlement, span: Int) {
            settled[span] = s.settled
            for id in s.stragglers { rowStatus[id] = "in_flight" }
            for o in s.exceptions { rowStatus[o.deliveryID] = o.status.rawValue }
        }

        /// The effective status (DESIGN, "The effective status").
        func status(_ id: Int64, span: Int, after: Int64) -> String {
            if let s = rowStatus[id] { return s }
            return id <= settled[span, default: after] ? "sent" : "batch"
        }
    }

    @Test("simulated runs: U never passes the bound, a kill at any step repeats exactly U rows, no row is implied sent without a 200, and the ledger ends as APNs answered",
          arguments: 1...40)
    func simulated(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)  // a failing seed replays
        let concurrency = 8, recordEvery = 6, bound = concurrency + recordEvery
        // Three spans of one campaign's rows, ids with gaps (other campaigns' rows between).
        var spans: [SpanWatermark] = []
        var next: Int64 = 0
        for _ in 0..<3 {
            let after = next
            var ids: [Int64] = []
            for _ in 0..<Int.random(in: 20...60, using: &rng) { next += Int64.random(in: 1...3, using: &rng); ids.append(next) }
            spans.append(SpanWatermark(after: after, rows: ids))
        }
        var ledger = Ledger()
        var inFlight: [(span: Int, id: Int64)] = []
        var answers: [Int64: Bool] = [:]  // true: 200
        var writing: (span: Int, settlement: SpanWatermark.Settlement)?
        var now = Self.t0
        var steps = 0
        func total() -> Int { spans.reduce(0) { $0 + $1.unresolved } }

        while spans.contains(where: { !$0.isDone }) {
            steps += 1
            try #require(steps < 100_000, "the simulation does not end (seed \(seed))")
            now += .milliseconds(Int.random(in: 0...40, using: &rng))
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...2:  // sends start while the window and the bound allow
                for s in spans.indices where spans[s].nextToSend != nil {
                    while inFlight.count < concurrency && total() < bound, spans[s].nextToSend != nil {
                        inFlight.append((s, spans[s].send(at: now)))
                    }
                }
            case 3...5:  // an answer, in any order
                guard !inFlight.isEmpty else { continue }
                let (s, id) = inFlight.remove(at: Int.random(in: 0..<inFlight.count, using: &rng))
                let ok = Int.random(in: 0..<10, using: &rng) > 0
                answers[id] = ok
                spans[s].answered(id, ok ? .accepted : Self.failed(id))
            case 6...7:  // the writer proposes a settlement for a span
                guard writing == nil else { continue }
                let s = Int.random(in: 0..<spans.count, using: &rng)
                if let settlement = spans[s].settlement(at: now, straggleAfter: .milliseconds(250),
                                                        pressure: total() * 5 >= bound * 4) {
                    writing = (s, settlement)
                }
            default:  // the write ends: mostly committed, sometimes a transient fault
                guard let (s, settlement) = writing else { continue }
                writing = nil
                if Int.random(in: 0..<5, using: &rng) > 0 {
                    spans[s].committed(settlement)
                    ledger.apply(settlement, span: s)
                } else {
                    spans[s].abandoned(settlement)
                }
            }
            // The invariants, at every step.
            #expect(total() <= bound, "U \(total()) over the bound (seed \(seed), step \(steps))")
            for (s, span) in spans.enumerated() {
                // A kill now: a run taking the span over sends again exactly its U rows sent here.
                let repeats = span.resentByATakeover.filter { span.wasSent($0) }.count
                #expect(repeats == span.unresolved, "span \(s): \(repeats) repeats, U \(span.unresolved) (seed \(seed), step \(steps))")
                // Nothing implied sent without a 200.
                for id in span.rows where ledger.status(id, span: s, after: span.after) == "sent" {
                    #expect(answers[id] == true, "row \(id) reads sent without a 200 (seed \(seed), step \(steps))")
                }
            }
        }
        // The ledger ends as APNs answered: a 200 reads sent, a refusal its status.
        for (s, span) in spans.enumerated() {
            for id in span.rows {
                #expect(ledger.status(id, span: s, after: span.after) == (answers[id] == true ? "sent" : "failed"),
                        "row \(id) (seed \(seed))")
            }
        }
    }
}
