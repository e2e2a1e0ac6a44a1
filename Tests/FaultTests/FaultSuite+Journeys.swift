import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension FaultSuite {
    /// A journey of two sends (ask, then a branch, then thanks) whose members are moved by
    /// two `herald run` workers while one of them is killed with SIGKILL again and again
    /// (DESIGN, contract 11, "How a run moves members"): every member takes each edge once
    /// (its transitions, and the key that refuses a move written twice), each device gets
    /// each message, and what came twice is within the repeat bound of each kill, under its
    /// first apns-id. What APNs accepted is the simulator's own log.
    @Test func journeyMembersTakeEachEdgeOnceThroughKills() async throws {
        let concurrency = 50
        try await Self.scenario("journey kills", devices: 5000, name: "Not sent", collapseID: "not-sent",
                                faults: ["--latency-ms", "20"],
                                extra: ["HERALD_CONCURRENCY": "\(concurrency)", "HERALD_BATCH_SIZE": "200"],
                                prepare: { client, campaign in
            try await client.exec("UPDATE campaigns SET send_at = now() + interval '1 year' WHERE id = \(campaign)")
            try await client.exec("""
                INSERT INTO journeys (id, name, first_step, entry, entry_event) VALUES (1, 'Kills', 'ask', 'conversion', 'order_delivered');
                INSERT INTO campaigns (id, name, kind, status, content, category_id, collapse_id, journey_id) VALUES
                    (901, 'Ask', 'feedback', 'scheduled', '{"en": {"title": "How was it?", "body": "Tell us"}}', 'feedback.v1', 'j-ask', 1);
                INSERT INTO campaigns (id, name, kind, status, content, media_url, collapse_id, journey_id) VALUES
                    (902, 'Thanks', 'poster', 'scheduled', '{"en": {"title": "Thanks", "body": "Anyway"}}', 'https://cdn.example.com/t.png', 'j-thanks', 1);
                INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id, of_step) VALUES
                    (1, 1, 'ask', 'send', 901, NULL), (1, 1, 'gap', 'branch', NULL, 'ask'), (1, 1, 'thanks', 'send', 902, NULL);
                INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES
                    (1, 1, 'ask', 1, 'next', '{}', 'gap'),
                    (1, 1, 'gap', 1, 'reply', '{}', NULL),
                    (1, 1, 'gap', 2, 'else', '{}', 'thanks'),
                    (1, 1, 'thanks', 1, 'next', '{}', NULL);
                UPDATE journeys SET status = 'running' WHERE id = 1;
                INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
                SELECT id, 'order_delivered', now(), 'order-' || id FROM users;
                """)
        }) { s in
            #expect(try await s.count("SELECT count(*) FROM journey_members WHERE state = 'active'") == s.devices)
            var kills = 0
            var workers = [try s.worker(), try s.worker()]
            let clock = ContinuousClock()
            let end = clock.now + .seconds(180)
            func busy() async throws -> Bool {
                try await s.count("""
                    SELECT (SELECT count(*) FROM journey_members WHERE state = 'active')
                         + (SELECT count(*) FROM deliveries WHERE campaign_id IN (901, 902) AND status IN ('queued', 'in_flight'))
                    """) > 0
            }
            while kills < 4, clock.now < end, try await busy() {
                try await Task.sleep(for: .milliseconds(Int64.random(in: 200...700)))
                for w in workers where !w.isRunning {
                    let code = try await w.wait(limit: .seconds(5))
                    try #require(code == 0 || code == 75, "herald run exited \(code)\n\(w.tail())")
                }
                workers.removeAll { !$0.isRunning }
                if let victim = workers.randomElement() {
                    victim.signal(SIGKILL)
                    if try await victim.wait(limit: .seconds(10)) == 128 + SIGKILL { kills += 1 }
                    workers.removeAll { $0 === victim }
                }
                while workers.count < 2 { workers.append(try s.worker()) }
            }
            for w in workers {
                let code = try await w.wait(limit: .seconds(180))
                #expect(code == 0 || code == 75, "herald run exited \(code)\n\(w.tail())")
            }
            try await s.runToCompletion()
            try await s.sim.stop()

            // Every member took the same three edges once, in order, and left.
            #expect(try await s.count("SELECT count(*) FROM journey_members WHERE state = 'done' AND moves = 3") == s.devices)
            #expect(try await s.count("""
                SELECT count(*) FROM (
                    SELECT member_id, string_agg(from_step || '-' || kind || '->' || coalesce(to_step, 'out'), ' ' ORDER BY seq) AS path,
                           array_agg(seq ORDER BY seq) AS seqs
                    FROM journey_transitions GROUP BY member_id) p
                WHERE p.path = 'ask-next->gap gap-else->thanks thanks-next->out' AND p.seqs = '{1,2,3}'
                """) == s.devices)
            // Each message: one ledger row a device, all sent; APNs got each device's once, but
            // for the repeats a kill allows, under the row's apns-id.
            let accepted = try s.sim.accepted()
            for (message, collapse) in [(Int64(901), "j-ask"), (902, "j-thanks")] {
                var f = try await compare("journey kills (\(collapse))", client: s.client,
                                          accepted: accepted.filter { $0.collapseID == collapse }, campaign: message, collapseID: collapse)
                f.runs = s.runs
                f.kills = kills
                print(f)
                #expect(f.targeted == s.devices)
                #expect(f.sentInLedger == s.devices)
                #expect(f.delivered == s.devices)
                #expect(f.lost == 0 && f.failed == 0 && f.leftover == 0)
                #expect(f.repeated <= Self.repeatBound(concurrency: concurrency) * max(kills, 1))
                #expect(f.repeatsWithOtherAPNsID == 0)
                #expect(f.ledgerAPNsIDMismatch == 0)
            }
            #expect(kills >= 1)
        }
    }
}
