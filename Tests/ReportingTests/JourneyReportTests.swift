import Foundation
import PostgresNIO
@testable import Reporting
import Store
import Testing
import TestSupport
#if canImport(FoundationXML)
import FoundationXML
#endif

/// `herald report`: each journey as its analyst views have it (analyst.journey_goal,
/// journey_steps, journey_flow), in text and drawn as a flow in the HTML page.
@Suite("Journeys in the report")
struct JourneyReportTests {
    /// "After the order" after a while: 10 members asked; 4 answered with a complaint, 3
    /// otherwise, 1 bought (the goal), 2 still listening; 2 more users held out, 1 of whom
    /// bought anyway.
    static let history = """
        INSERT INTO journeys (id, name, first_step, entry, entry_event, goal_event, holdout_pct)
        VALUES (1, 'After the order', 'ask', 'conversion', 'order_delivered', 'purchase', 10);
        INSERT INTO journey_members (id, journey_id, version, user_id, step, state, due_at, waiting, moves)
        SELECT n, 1, 1, n,
               CASE WHEN n <= 4 THEN 'sorry' WHEN n <= 7 THEN 'thanks' ELSE 'listen' END,
               CASE WHEN n <= 7 THEN 'done' WHEN n = 8 THEN 'goal' WHEN n <= 10 THEN 'active' ELSE 'held_out' END,
               CASE WHEN n IN (9, 10) THEN now() + interval '1 day' END, n IN (9, 10),
               CASE WHEN n <= 7 THEN 3 WHEN n = 8 THEN 2 WHEN n <= 10 THEN 1 ELSE 0 END
        FROM generate_series(1, 12) n;
        INSERT INTO journey_transitions (member_id, seq, journey_id, from_step, position, kind, to_step)
        SELECT n, 1, 1, 'ask', 1, 'next', 'listen' FROM generate_series(1, 10) n
        UNION ALL SELECT n, 2, 1, 'listen', 1, 'text', 'sorry' FROM generate_series(1, 4) n
        UNION ALL SELECT n, 3, 1, 'sorry', 1, 'next', NULL FROM generate_series(1, 4) n
        UNION ALL SELECT n, 2, 1, 'listen', 2, 'reply', 'thanks' FROM generate_series(5, 7) n
        UNION ALL SELECT n, 3, 1, 'thanks', 1, 'next', NULL FROM generate_series(5, 7) n
        UNION ALL SELECT 8, 2, 1, 'listen', NULL, 'goal', NULL;
        INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
        VALUES (8, 'purchase', now(), 'p8'), (11, 'purchase', now(), 'p11');
        """

    @Test func eachJourneyShowsItsGoalItsStepsAndTheMembersOnEachEdge() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.audience(count: 12))
            try await client.exec(Self.history)
            let data = try await AnalystReport(client: client, logger: TestDatabase.logger).data()
            let j = try #require(data.journeys.first)
            #expect(data.journeys.count == 1)
            #expect(j.entered == 10 && j.reachedGoal == 1 && j.heldOut == 2 && j.heldOutConverted == 1)
            #expect(j.goalRatePct == 10 && j.heldOutRatePct == 50)
            #expect(j.flow.map { "\($0.from)>\($0.target):\($0.kind)=\($0.members)" } == [
                "ask>listen:next=10", "listen>sorry:text=4", "listen>thanks:reply=3", "listen>out:goal=1",
                "sorry>out:next=4", "thanks>out:next=3",
            ])
            #expect(j.steps.first { $0.step == "listen" }?.waiting == 2)

            let text = TextReport.text(data)
            #expect(text.contains(#"journey 1 "After the order": 10 entered, 1 reached the goal (purchase, 10.0%); 2 held out, 1 of them converted anyway (50.0%)"#))
            #expect(text.contains("  listen → sorry (text): 4"))
            #expect(text.contains("  at listen: 2 (2 waiting for an event)"))

            let page = ReportPage.html(data)
            #expect(page.contains("id=\"journey-1\""))
            // The flow is an SVG that parses as XML, one arrow an edge, each with its count.
            let start = try #require(page.range(of: "<svg class=\"chart flow\""))
            let end = try #require(page.range(of: "</svg>", range: start.lowerBound..<page.endIndex))
            let svg = String(page[start.lowerBound..<end.upperBound])
            let parser = XMLParser(data: Data(svg.utf8))
            #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
            #expect(svg.components(separatedBy: "class=\"flow-edge").count - 1 == 6)
            #expect(svg.contains(">text 4</text>") && svg.contains(">goal 1</text>") && svg.contains(">2 here</text>"))
        }
    }

    /// The flow's columns: one move further from where members enter each, out last; a
    /// step reached only through a loop after the others; parallel edges each drawn.
    @Test func theFlowLaysOutItsStepsByMovesFromTheEntry() {
        func edge(_ from: String, _ to: String, _ kind: String = "next") -> ReportData.Journey.Edge {
            .init(version: 1, from: from, position: 1, kind: kind, to: to, members: 1)
        }
        let layout = JourneyFlow.layout([
            edge("ask", "listen"), edge("listen", "sorry", "text"), edge("listen", "thanks", "reply"),
            edge("listen", "", "goal"), edge("listen", "remind", "timeout"), edge("remind", "listen"),
            edge("sorry", ""), edge("thanks", ""),
        ])
        #expect(layout.column == ["ask": 0, "listen": 1, "sorry": 2, "thanks": 2, "remind": 2, "out": 3])
        #expect(layout.row["sorry"] == 0 && layout.row["thanks"] == 1 && layout.row["remind"] == 2)
        #expect(layout.columns == 4 && layout.rows == 3)
        // Every step in a loop: the first named starts it.
        let loop = JourneyFlow.layout([edge("a", "b"), edge("b", "a")])
        #expect(loop.column == ["a": 0, "b": 1])
    }
}
