import Foundation
import HeraldCore
import Testing

/// The decision of a journey's step on plain values (contract 11): the demo's journey after
/// "How was your order?".
@Suite("Journeys: the decision of a step")
struct JourneyDecisionTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let day: TimeInterval = 86_400

    /// ask → listen (2 days) → damaged: sorry, happy: thanks, nothing: remind → listen again → out.
    static let graph = JourneyGraph(
        first: "ask",
        steps: [
            JourneyStep(key: "ask", kind: .send),
            JourneyStep(key: "listen", kind: .waitFor, timeout: 2 * day),
            JourneyStep(key: "mood", kind: .branch),
            JourneyStep(key: "sorry", kind: .send),
            JourneyStep(key: "thanks", kind: .send),
            JourneyStep(key: "remind", kind: .send),
            JourneyStep(key: "listen-again", kind: .waitFor, timeout: 2 * day),
            JourneyStep(key: "pause", kind: .wait, wait: .duration(3600)),
            JourneyStep(key: "done", kind: .exit),
        ],
        edges: [
            JourneyEdge(from: "ask", position: 1, kind: .next, to: "listen"),
            JourneyEdge(from: "listen", position: 1, kind: .text, to: "sorry"),
            JourneyEdge(from: "listen", position: 2, kind: .reply, to: "mood"),
            JourneyEdge(from: "listen", position: 3, kind: .timeout, to: "remind"),
            JourneyEdge(from: "mood", position: 1, kind: .action, to: "thanks"),
            JourneyEdge(from: "mood", position: 2, kind: .otherwise, to: "pause"),
            JourneyEdge(from: "sorry", position: 1, kind: .next, to: "done"),
            JourneyEdge(from: "thanks", position: 1, kind: .next, to: nil),
            JourneyEdge(from: "remind", position: 1, kind: .next, to: "listen-again"),
            JourneyEdge(from: "listen-again", position: 1, kind: .reply, to: "mood"),
            JourneyEdge(from: "listen-again", position: 2, kind: .timeout, to: nil),
            JourneyEdge(from: "pause", position: 1, kind: .next, to: "done"),
        ])

    static func id(_ from: String, _ position: Int) -> JourneyEdge.ID { JourneyEdge.ID(from: from, position: position) }

    @Test func anEntrantIsSentTheFirstMessageAndWaitsForItsAnswerUntilTheTimeout() {
        let a = JourneyDecision.advance(JourneyMemberFacts(step: "ask", reachedAt: Self.t0), in: Self.graph, now: Self.t0)
        #expect(a.sends == ["ask"])
        #expect(a.moves == [JourneyMove(from: "ask", position: 1, kind: "next", to: "listen")])
        #expect(a.rest == .at(step: "listen", reachedAt: Self.t0, due: Self.t0 + 2 * Self.day, waiting: true))
    }

    @Test func aTypedAnswerTheRuleMatchesTakesTheFirstEdgeThatHoldsInPositionOrder() {
        // The text rule and "any reply" both hold: position 1 wins.
        let facts = JourneyMemberFacts(step: "listen", reachedAt: Self.t0, holds: [Self.id("listen", 1), Self.id("listen", 2)])
        let a = JourneyDecision.advance(facts, in: Self.graph, now: Self.t0 + 3600)
        #expect(a.moves.map(\.to) == ["sorry", "done"])
        #expect(a.sends == ["sorry"])
        #expect(a.rest == .left(.done))
    }

    @Test func aReplyGoesOnToTheBranchWhichDecidesAtOnce() {
        let happy = JourneyMemberFacts(step: "listen", reachedAt: Self.t0, holds: [Self.id("listen", 2), Self.id("mood", 1)])
        let a = JourneyDecision.advance(happy, in: Self.graph, now: Self.t0 + 60)
        #expect(a.moves.map(\.kind) == ["reply", "action", "next"])
        #expect(a.sends == ["thanks"])
        #expect(a.rest == .left(.done))
        // No edge of the branch holds: its else edge, then a wait of an hour from now.
        let other = JourneyMemberFacts(step: "listen", reachedAt: Self.t0, holds: [Self.id("listen", 2)])
        let b = JourneyDecision.advance(other, in: Self.graph, now: Self.t0 + 60)
        #expect(b.moves.map(\.kind) == ["reply", "else"])
        #expect(b.rest == .at(step: "pause", reachedAt: Self.t0 + 60, due: Self.t0 + 60 + 3600, waiting: false))
    }

    @Test func noAnswerBeforeTheTimeoutRestsUntilItThenTakesTheTimeoutEdge() {
        let quiet = JourneyMemberFacts(step: "listen", reachedAt: Self.t0)
        let early = JourneyDecision.advance(quiet, in: Self.graph, now: Self.t0 + Self.day)
        #expect(early.moves.isEmpty && early.sends.isEmpty)
        #expect(early.rest == .at(step: "listen", reachedAt: Self.t0, due: Self.t0 + 2 * Self.day, waiting: true))
        let late = JourneyDecision.advance(quiet, in: Self.graph, now: Self.t0 + 2 * Self.day)
        #expect(late.moves.map(\.kind) == ["timeout", "next"])
        #expect(late.sends == ["remind"])
        // The second wait is measured from when the member reached it, not from the first.
        #expect(late.rest == .at(step: "listen-again", reachedAt: Self.t0 + 2 * Self.day, due: Self.t0 + 4 * Self.day, waiting: true))
    }

    @Test func aWaitForReachedInThisDecisionIgnoresWhatHeldAtTheStepBefore() {
        // The claim found "listen-again" edge 1 holding, but the member reaches it only now.
        let facts = JourneyMemberFacts(step: "remind", reachedAt: Self.t0, holds: [Self.id("listen-again", 1)])
        let a = JourneyDecision.advance(facts, in: Self.graph, now: Self.t0)
        #expect(a.rest == .at(step: "listen-again", reachedAt: Self.t0, due: Self.t0 + 2 * Self.day, waiting: true))
    }

    @Test func theGoalTakesTheMemberOutFromWhereverItIs() {
        let facts = JourneyMemberFacts(step: "listen", reachedAt: Self.t0, holds: [Self.id("listen", 1)], goalReached: true)
        let a = JourneyDecision.advance(facts, in: Self.graph, now: Self.t0)
        #expect(a.moves == [JourneyMove(from: "listen", position: nil, kind: "goal", to: nil)])
        #expect(a.sends.isEmpty)
        #expect(a.rest == .left(.goal))
    }

    @Test func aWaitUntilALocalTimeOfDayEndsByTheUsersClock() throws {
        let paris = try #require(TimeZone(identifier: "Europe/Paris"))
        let graph = JourneyGraph(
            first: "morning",
            steps: [JourneyStep(key: "morning", kind: .wait, wait: .localTime(hour: 9, minute: 30)), JourneyStep(key: "out", kind: .exit)],
            edges: [JourneyEdge(from: "morning", position: 1, kind: .next, to: "out")])
        // 2027-01-15 20:00 UTC is 21:00 in Paris: the next 09:30 there is 08:30 UTC the day after.
        let reached = try #require(ISO8601DateFormatter().date(from: "2027-01-15T20:00:00Z"))
        let wake = try #require(ISO8601DateFormatter().date(from: "2027-01-16T08:30:00Z"))
        let a = JourneyDecision.advance(JourneyMemberFacts(step: "morning", reachedAt: reached, zone: paris), in: graph, now: reached)
        #expect(a.rest == .at(step: "morning", reachedAt: reached, due: wake, waiting: false))
        let b = JourneyDecision.advance(JourneyMemberFacts(step: "morning", reachedAt: reached, zone: paris), in: graph, now: wake)
        #expect(b.rest == .left(.done))
        // A best hour with no best hour known does not wait.
        let best = JourneyGraph(
            first: "best",
            steps: [JourneyStep(key: "best", kind: .wait, wait: .bestHour), JourneyStep(key: "out", kind: .exit)],
            edges: [JourneyEdge(from: "best", position: 1, kind: .next, to: "out")])
        #expect(JourneyDecision.advance(JourneyMemberFacts(step: "best", reachedAt: reached), in: best, now: reached).rest == .left(.done))
        let at19 = JourneyDecision.advance(JourneyMemberFacts(step: "best", reachedAt: reached, zone: paris, bestHour: 19), in: best, now: reached)
        #expect(at19.rest == .at(step: "best", reachedAt: reached, due: wake + 9.5 * 3600, waiting: false))
    }

    @Test func aSplitTakesTheShareTheDatabaseBucketedTheUserInto() {
        let graph = JourneyGraph(
            first: "ab",
            steps: [JourneyStep(key: "ab", kind: .split), JourneyStep(key: "a", kind: .exit), JourneyStep(key: "b", kind: .exit)],
            edges: [JourneyEdge(from: "ab", position: 1, kind: .share, to: "a"), JourneyEdge(from: "ab", position: 2, kind: .share, to: "b")])
        let a = JourneyDecision.advance(JourneyMemberFacts(step: "ab", reachedAt: Self.t0, holds: [Self.id("ab", 2)]), in: graph, now: Self.t0)
        #expect(a.moves.map(\.to) == ["b"])
        // No share holds (a graph the check refuses): the member is stuck, said so, not moved.
        let b = JourneyDecision.advance(JourneyMemberFacts(step: "ab", reachedAt: Self.t0), in: graph, now: Self.t0)
        #expect(b.moves.isEmpty)
        #expect(b.rest == .left(.stuck("step ab: no edge holds")))
    }

    @Test func aLoopWithNoWaitStopsAtTheGuardAndRestsDueNow() {
        let graph = JourneyGraph(
            first: "x",
            steps: [JourneyStep(key: "x", kind: .branch), JourneyStep(key: "y", kind: .branch)],
            edges: [JourneyEdge(from: "x", position: 1, kind: .otherwise, to: "y"), JourneyEdge(from: "y", position: 1, kind: .otherwise, to: "x")])
        let a = JourneyDecision.advance(JourneyMemberFacts(step: "x", reachedAt: Self.t0), in: graph, now: Self.t0)
        #expect(a.moves.count == JourneyDecision.maxMoves)
        #expect(a.rest == .at(step: "x", reachedAt: Self.t0, due: Self.t0, waiting: false))
    }
}
