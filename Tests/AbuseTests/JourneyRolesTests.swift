import Foundation
import PostgresNIO
import Store
import TestSupport
import Testing

/// Journeys and the least-privilege roles (contract 11): a marketer writes journeys but not
/// their members' progress; the job moves members and learns whether an edge holds, not what
/// users replied or bought; an analyst reads the journey views only; the app server reads
/// none of it.
@Suite("Journeys and the roles")
struct JourneyRolesTests {
    @Test func eachRoleDoesWhatItsMemberShouldAndNoMore() async throws {
        try await TestDatabase.with { admin, config in
            try await admin.exec(Fixtures.audience(count: 1))
            try await admin.exec("""
                INSERT INTO journeys (id, name, first_step, entry, entry_event, goal_event) VALUES (1, 'J', 'w', 'conversion', 'x', 'purchase');
                INSERT INTO journey_steps (journey_id, version, step, kind, timeout) VALUES (1, 1, 'w', 'wait_for', '1 day');
                INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES
                    (1, 1, 'w', 1, 'converted', '{"event": "purchase"}', NULL), (1, 1, 'w', 2, 'timeout', '{}', NULL);
                INSERT INTO journey_members (id, journey_id, version, user_id, step, due_at, waiting, moves) VALUES (1, 1, 1, 1, 'w', now(), true, 1);
                INSERT INTO journey_transitions (member_id, seq, journey_id, from_step, position, kind, to_step) VALUES (1, 1, 1, 'w', 2, 'timeout', NULL);
                INSERT INTO conversions (user_id, event, occurred_at, idempotency_key) VALUES (1, 'purchase', now(), 'p1');
                """)
            try await asMember(of: "herald_marketer", database: config, admin: admin) { (client: Database, _: DatabaseConfiguration) async throws in
                // Writes and reads journeys; moves no member and rewrites no history.
                try await client.exec("UPDATE journey_steps SET timeout = '2 days' WHERE step = 'w'")
                #expect(try await client.scalar("SELECT count(*) FROM journey_members", as: Int64.self) == 1)
                #expect(await refused(client, [
                    "UPDATE journey_members SET step = 'w', due_at = now()",
                    "INSERT INTO journey_members (journey_id, version, user_id, step, due_at) VALUES (1, 1, 1, 'w', now())",
                    "DELETE FROM journey_transitions",
                    "UPDATE journey_transitions SET kind = 'goal'",
                    "SELECT herald_journey_enter(1, ARRAY[1]::bigint[])",
                ]).count == 5)
            }
            try await asMember(of: "herald_job", database: config, admin: admin) { (client: Database, _: DatabaseConfiguration) async throws in
                // Learns that the goal was reached and that the edge holds, not the conversions.
                #expect(try await client.scalar("SELECT herald_journey_goal_reached(1, 'purchase', now() - interval '1 hour')", as: Bool.self) == true)
                #expect(try await client.scalar("""
                    SELECT herald_journey_edge_holds(e, 1, now() - interval '1 hour', now() - interval '1 hour', NULL)
                    FROM journey_edges e WHERE e.position = 1
                    """, as: Bool.self) == true)
                #expect(await refused(client, [
                    "SELECT * FROM conversions",
                    "UPDATE journeys SET status = 'running'",
                    "INSERT INTO journey_steps (journey_id, version, step, kind) VALUES (1, 1, 'x', 'exit')",
                    "DELETE FROM journey_members",
                    "UPDATE journey_transitions SET kind = 'goal'",
                ]).count == 5)
            }
            try await asMember(of: "herald_analyst", database: config, admin: admin) { (client: Database, _: DatabaseConfiguration) async throws in
                #expect(try await client.scalar("SELECT sum(members)::bigint FROM analyst.journey_flow", as: Int64.self) == 1)
                #expect(await refused(client, [
                    "SELECT * FROM journeys", "SELECT * FROM journey_members", "SELECT * FROM journey_transitions",
                    "SELECT herald_journey_goal_reached(1, 'purchase', now())",
                ]).count == 4)
            }
            try await asMember(of: "herald_intake", database: config, admin: admin) { (client: Database, _: DatabaseConfiguration) async throws in
                #expect(await refused(client, ["SELECT * FROM journeys", "SELECT * FROM journey_members", "SELECT * FROM analyst.journey_flow"]).count == 3)
            }
            // A marketer closes the journey: its member leaves, which the marketer could not
            // have written itself (the trigger does it as the owner).
            try await asMember(of: "herald_marketer", database: config, admin: admin) { (client: Database, _: DatabaseConfiguration) async throws in
                try await client.exec("UPDATE journeys SET status = 'closed' WHERE id = 1")
                #expect(try await client.scalar("SELECT state FROM journey_members WHERE id = 1", as: String.self) == "exited")
                await #expect(throws: (any Error).self) { try await client.exec("UPDATE journeys SET status = 'running' WHERE id = 1") }
            }
        }
    }
}
