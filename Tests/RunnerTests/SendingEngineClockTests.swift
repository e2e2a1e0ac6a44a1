import APNs
import Foundation
import HeraldCore
import Logging
import NIOConcurrencyHelpers
@testable import Runner
import Store
import Testing
import TestSupport

/// The sending engine's waits on an injected clock: an open breaker, retries
/// coming due and an outage's budget pass in virtual time, and the engine
/// acts on them as the real clock would have it.
@Suite("The sending engine on a test clock")
struct SendingEngineClockTests {
    typealias Row = SendingSessionTests.Row

    /// Items in memory, each due again after the delay its outcome asks for.
    final class Source: ClaimSource, Sendable {
        private struct State {
            var due: [Int64: ContinuousClock.Instant] = [:]
            var outcomes: [DeliveryOutcome] = []
        }

        private let state: NIOLockedValueBox<State>
        let clock: MockClock

        init(ids: ClosedRange<Int64>, clock: MockClock) {
            self.clock = clock
            state = NIOLockedValueBox(State(due: Dictionary(uniqueKeysWithValues: ids.map { ($0, clock.now) })))
        }

        var outcomes: [DeliveryOutcome] { state.withLockedValue { $0.outcomes } }

        func claim(after cursor: Int64, excludingApps: [String]) async throws -> ClaimBatch<Row> {
            let now = clock.now
            return state.withLockedValue { s in
                let ids = s.due.filter { $0.key > cursor && $0.value <= now }.keys.sorted().prefix(10)
                for id in ids { s.due[id] = nil }
                return ClaimBatch(items: ids.map { Row(deliveryID: $0) }, end: ids.last ?? cursor)
            }
        }

        func notification(for item: Row) -> Result<APNsNotification, CampaignProblem> {
            .success(APNsNotification(deviceToken: String(item.deliveryID), payload: Array("{}".utf8)))
        }

        func record(_ outcomes: [DeliveryOutcome]) async throws {
            let now = clock.now
            state.withLockedValue { s in
                s.outcomes += outcomes
                for o in outcomes where o.status == .retry || o.status == .queued {
                    s.due[o.deliveryID] = now + .milliseconds(Int64(o.delay * 1000))
                }
            }
        }

        func nextDue(excludingApps: [String]) async throws -> Duration? {
            let now = clock.now
            return state.withLockedValue { s in s.due.values.min().map { max(.zero, $0 - now) } }
        }
    }

    /// APNs unreachable for its first `failures` requests (or always), then accepting.
    final class Transport: PushTransport {
        let failures: Int
        let sent = NIOLockedValueBox(0)

        init(failures: Int) { self.failures = failures }

        func send(_ notification: APNsNotification) async -> APNsResult {
            let n = sent.withLockedValue { n -> Int in
                n += 1
                return n
            }
            return n <= failures
                ? APNsResult(outcome: .failed(status: nil, reason: .connectionFailed), attempts: 1, retried: 0)
                : APNsResult(outcome: .sent(apnsID: notification.apnsID), attempts: 1, retried: 0)
        }

        func shutdown() async {}
    }

    static func engine(_ transport: Transport, clock: MockClock) -> SendingEngine {
        var options = RunOptions(topic: "com.example.app", concurrency: 3, recordEvery: 2, retryWait: .seconds(60))
        options.outageBudget = .seconds(300)
        options.clock = clock
        return SendingEngine(transport: transport, options: options, leases: nil, logger: Logger(label: "test"))
    }

    @Test func anOpenBreakerAndTheRetriesAreWaitedOutOnTheRunsClock() async throws {
        let clock = MockClock()
        let source = Source(ids: 1...5, clock: clock)
        let engine = Self.engine(Transport(failures: 3), clock: clock)
        let began = ContinuousClock().now
        let (finish, tally) = try await clock.driving {
            var tally = SendTally()
            let finish = try await engine.send(source, breakers: RunBreakers(threshold: 3), tally: &tally)
            return (finish, tally)
        }
        #expect(finish == .done)
        #expect(tally.sent == 5)
        #expect(Set(source.outcomes.filter { $0.status == .sent }.map(\.deliveryID)) == Set(1...5))
        // Three lost connections opened the breaker for 1 s, and gave their items a 1 s backoff.
        #expect(clock.elapsed >= .seconds(1) && clock.elapsed < .seconds(10), "\(clock.elapsed)")
        #expect(ContinuousClock().now - began < .seconds(10))
    }

    @Test func anOutageLongerThanItsBudgetEndsTheSourceOnTheRunsClock() async throws {
        let clock = MockClock()
        let source = Source(ids: 1...5, clock: clock)
        let engine = Self.engine(Transport(failures: .max), clock: clock)
        let finish = try await clock.driving {
            var tally = SendTally()
            return try await engine.send(source, breakers: RunBreakers(threshold: 3), tally: &tally)
        }
        guard case .outage(let why) = finish else {
            Issue.record("expected an outage, got \(finish)")
            return
        }
        #expect(why.hasPrefix("APNs (api.push.apple.com) unreachable for 3"), "\(why)")
        // Five minutes of probes, 1 s doubling to 30 s apart, on the test's clock.
        #expect(clock.elapsed >= .seconds(300) && clock.elapsed < .seconds(340), "\(clock.elapsed)")
        // Nothing was lost: every item is back in the queue or waits for a retry.
        let last = Dictionary(source.outcomes.map { ($0.deliveryID, $0.status) }, uniquingKeysWith: { _, later in later })
        #expect(last.values.allSatisfy { $0 == .retry || $0 == .queued } && last.count == 5)
    }

    /// Two campaigns of one run share its breakers: what one learns of a host
    /// the other's next session starts from, and a host it did not touch
    /// keeps what the other learnt meanwhile.
    @Test func whatOneSessionLearnsIsTheRunsForTheNext() {
        let now = ContinuousClock().now
        let run = RunBreakers(threshold: 3)
        let (a, b) = ("api.push.apple.com", "api.sandbox.push.apple.com")
        let startOne = run.snapshot, startTwo = run.snapshot
        var one = startOne, two = startTwo
        for _ in 0..<3 { one[a].record(transportFailure: true, error: "connectionFailed", at: now) }
        two[b].record(transportFailure: true, error: "timedOut", at: now)
        two.refusedApps["shop"] = AppRefusal(app: "shop", environment: .production, answer: "403 InvalidProviderToken")
        run.learnt(one, since: startOne)
        run.learnt(two, since: startTwo)
        let learnt = run.snapshot
        #expect(learnt[a].reopenAt != nil, "the open breaker of the first is kept")
        #expect(learnt[b].consecutive == 1)
        #expect(learnt.refusedApps.keys.sorted() == ["shop"])
    }
}
