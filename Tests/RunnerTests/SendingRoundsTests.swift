import APNs
import Foundation
import HeraldCore
@testable import Runner
import Testing

/// The engine's decisions between sessions on plain values: the waits the
/// engine makes (an audience still being written, retries coming due, an
/// open breaker, leases that could not be renewed) and when each ends it.
@Suite("Between sending sessions")
struct SendingRoundsTests {
    typealias End = SendingSession<SendingSessionTests.Row>.End
    static let start = ContinuousClock().now
    static let settings = SendingRounds.Settings(outageBudget: .seconds(300), retryWait: .seconds(60), databaseBudget: .seconds(120))
    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }
    static let host = APNsEnvironment.production.host

    static func ended(_ end: End, moreComing: Bool = false, breakers: APNsBreakers = APNsBreakers(threshold: 3),
                      maySend: Bool = true, at seconds: Double = 0) -> (SendingRounds, SendingRounds.Action) {
        var rounds = SendingRounds(settings: settings)
        let action = rounds.sessionEnded(end, moreComing: moreComing, breakers: breakers, maySend: maySend, now: at(seconds))
        return (rounds, action)
    }

    @Test func whatEndsTheSourceAtOnce() {
        #expect(Self.ended(.paused).1 == .finish(.paused))
        #expect(Self.ended(.cancelled).1 == .finish(.cancelled))
        #expect(Self.ended(.expired).1 == .finish(.expired))
        #expect(Self.ended(.stopped).1 == .finish(.stopped))
        guard case .finish(.outage(let why)) = Self.ended(.declaredGone).1 else {
            Issue.record("a run declared gone ends in an outage")
            return
        }
        #expect(why.contains("declared this run gone"))
    }

    @Test func anAudienceStillBeingWrittenIsLookedAtAgainSoon() {
        var (rounds, action) = Self.ended(.drained, moreComing: true, at: 1)
        #expect(action == .sleep(until: Self.at(1.05), .more))
        #expect(rounds.woke(maySend: true, now: Self.at(1.05)) == .runSession)
    }

    @Test func retriesDueWithinTheWaitAreWaitedFor() {
        var (rounds, action) = Self.ended(.drained, at: 10)
        #expect(action == .askNextDue)
        #expect(rounds.nextDue(.seconds(5), now: Self.at(10)) == .sleep(until: Self.at(15.02), .retries(.seconds(5))))
        #expect(rounds.woke(maySend: true, now: Self.at(15.02)) == .runSession)
        // Nothing left, or a retry later than HERALD_RETRY_WAIT_SECONDS: the next run takes it.
        (rounds, _) = Self.ended(.drained)
        #expect(rounds.nextDue(nil, now: Self.at(0)) == .finish(.done))
        (rounds, _) = Self.ended(.drained)
        #expect(rounds.nextDue(.seconds(61), now: Self.at(0)) == .finish(.done))
        // One already due goes at once (after the margin).
        (rounds, _) = Self.ended(.drained)
        #expect(rounds.nextDue(.zero, now: Self.at(0)) == .sleep(until: Self.at(0.02), .retries(.zero)))
    }

    @Test func anOpenBreakerIsWaitedOutUntilItsOutageOutlastsTheBudget() {
        var breakers = APNsBreakers(threshold: 3)
        var breaker = CircuitBreaker(threshold: 3)
        for _ in 0..<3 { breaker.record(transportFailure: true, error: "connectionFailed", at: Self.at(0)) }
        breakers[Self.host] = breaker
        var (rounds, action) = Self.ended(.breakerOpen(Self.host), breakers: breakers, at: 0.5)
        #expect(action == .sleep(until: Self.at(1), .breaker(host: Self.host, lastError: "connectionFailed")))
        #expect(rounds.woke(maySend: true, now: Self.at(1)) == .runSession)
        // The same outage 300 s on: the budget is spent.
        (rounds, action) = Self.ended(.breakerOpen(Self.host), breakers: breakers, at: 300)
        guard case .finish(.outage(let why)) = action else {
            Issue.record("expected an outage, got \(action)")
            return
        }
        #expect(why == "APNs (\(Self.host)) unreachable for 300 s: connectionFailed")
    }

    @Test func leasesThatCannotBeRenewedAreWaitedForWithinTheDatabaseBudget() {
        // Renewed again by the time the session ended: sending goes on at once.
        #expect(Self.ended(.fenced, maySend: true).1 == .runSession)
        var (rounds, action) = Self.ended(.fenced, maySend: false, at: 0)
        #expect(action == .sleep(until: Self.at(0.25), .leases))
        #expect(rounds.woke(maySend: false, now: Self.at(0.25)) == .sleep(until: Self.at(0.5), .leases))
        #expect(rounds.woke(maySend: true, now: Self.at(0.5)) == .runSession)
        (rounds, _) = Self.ended(.fenced, maySend: false, at: 0)
        guard case .finish(.outage(let why)) = rounds.woke(maySend: false, now: Self.at(120)) else {
            Issue.record("leases unrenewable for the database budget end the source")
            return
        }
        #expect(why.contains("more than 120 s"))
    }
}
