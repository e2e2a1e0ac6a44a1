import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// `herald prune` keeps every analyst figure: on a database where every
/// feature left its rows, each view of the `analyst` schema (listed from the
/// catalogue, so a view added later is covered without being named here)
/// reads the same rows before and after the prune, and none is empty.
@Suite("herald prune keeps the figures", .serialized)
struct PruneFiguresTests {
    /// Every view of the analyst schema, by name.
    static func analystViews(_ client: Database) async throws -> [String] {
        var names: [String] = []
        for try await name in try await client.query("""
            SELECT c.relname::text FROM pg_class c
            WHERE c.relnamespace = 'analyst'::regnamespace AND c.relkind IN ('v', 'm')
            ORDER BY 1
            """, logger: TestDatabase.logger).decode(String.self) {
            names.append(name)
        }
        return names
    }

    /// Each view's rows as text, in a stable order.
    static func snapshot(_ client: Database, views: [String]) async throws -> [String: [String]] {
        var out: [String: [String]] = [:]
        for view in views {
            let quoted = "\"" + view.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            let rows = try await client.scalar("""
                SELECT coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '') FROM analyst.\(quoted) t
                """, as: String.self) ?? ""
            out[view] = rows.isEmpty ? [] : rows.components(separatedBy: "\n")
        }
        return out
    }

    @Test func everyAnalystViewReadsTheSameAfterAPrune() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                // The audience, a second app, the global control group.
                try await client.exec(Fixtures.catalogue)
                try await client.exec(Fixtures.audience(count: 120))
                try await client.exec("UPDATE settings SET control_group_pct = 10")
                // An A/B campaign with a holdout, a conversion event and a pace.
                try await client.exec(Fixtures.campaign(name: "AB"))
                try await client.exec("""
                    UPDATE campaigns SET holdout_pct = 20, conversion_event = 'purchase', attribution_window = '1 day',
                                         rate_per_minute = 6000
                    WHERE name = 'AB';
                    INSERT INTO campaign_variants (campaign_id, name, share, content)
                    SELECT id, v, 50, jsonb_build_object('en', jsonb_build_object('title', 'Hi ' || v, 'body', 'There'))
                    FROM campaigns, unnest(ARRAY['A', 'B']) v WHERE name = 'AB'
                    """)
                // A question answered by typing.
                try await client.exec(Fixtures.campaign(name: "Ask", kind: "feedback"))
                // An hourly series: the run makes its occurrence and sends it.
                try await client.exec(Fixtures.campaign(name: "Hourly"))
                try await client.exec("""
                    UPDATE campaigns SET repeat_unit = 'hour', send_at = date_trunc('minute', now()) - interval '90 minutes'
                    WHERE name = 'Hourly'
                    """)
                let ab = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'AB'", as: Int64.self))
                // A flash sale as a Live Activity: started by push-to-start where a device has a token.
                try await client.exec("""
                    INSERT INTO push_to_start_tokens (device_id, attributes_type, token)
                    SELECT id, 'HeraldSaleAttributes', 'e' || lpad(to_hex(id), 63, '0') FROM devices WHERE id % 2 = 0;
                    INSERT INTO campaigns (name, kind, status, content, default_locale, category_id, quiet_hours, frequency_capped,
                                           send_at, expires_at, live_activity)
                    VALUES ('Sale', 'flash_sale', 'scheduled', '{"en": {"title": "Sale", "body": "Coats at €49"}}', 'en',
                            'flash_sale.v1', false, false, now() - interval '1 minute', now() + interval '1 hour',
                            jsonb_build_object('title', 'Sale', 'state', jsonb_build_object('headline', 'Coats', 'price', '€49'),
                                'updates', jsonb_build_array(jsonb_build_object('state', jsonb_build_object('price', '€39'),
                                    'at', to_char((now() + interval '30 minutes') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')))))
                    """)

                // One real run sends them through the APNs simulator.
                let sim = try SimulatorProcess(directory: dir)
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret())
                var runs = 0
                try await FaultSuite.runToCompletion(env: env, dir: dir, runs: &runs)
                // A test send of the A/B campaign, as a marketer makes it.
                let token = try #require(try await client.scalar(
                    "SELECT token FROM devices ORDER BY id LIMIT 1", as: String.self))
                let test = try Child(name: "send-test", arguments: ["send-test", "\(ab)", "--device", token],
                                     environment: env, directory: dir)
                let testStatus = try await test.wait(limit: .seconds(60))
                #expect(testStatus == 0, "herald send-test exited \(testStatus)\n\(test.tail())")
                // The sale's activities register; its price drop, then its end, fall due and go out.
                let sale = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Sale'", as: Int64.self))
                try await client.exec("""
                    INSERT INTO live_activities (campaign_id, device_id, update_token, started_by, confirmed_step, confirmed_at, ended_at)
                    SELECT \(sale), id, 'd' || lpad(to_hex(id), 63, '0'), CASE WHEN id % 3 = 0 THEN 'app' ELSE 'push' END,
                           id % 2, now(), CASE WHEN id % 10 = 0 THEN now() END
                    FROM devices WHERE id % 2 = 0;
                    UPDATE campaigns SET send_at = now() - interval '1 second' WHERE sale_id = \(sale) AND sale_step = 1
                    """)
                try await FaultSuite.runToCompletion(env: env, dir: dir, runs: &runs)
                try await client.exec("""
                    UPDATE campaigns SET expires_at = now() WHERE sale_id = \(sale) AND sale_step = 1;
                    UPDATE campaigns SET send_at = now() - interval '1 second' WHERE sale_id = \(sale) AND sale_step = 2
                    """)
                try await FaultSuite.runToCompletion(env: env, dir: dir, runs: &runs)
                #expect(try await client.scalar("SELECT sum(sent)::bigint FROM analyst.live_activity_steps WHERE campaign_id = \(sale)", as: Int64.self) ?? 0 > 0)
                try await sim.stop()
                let occurrence = try #require(try await client.scalar("""
                    SELECT o.id FROM campaigns o JOIN campaigns s ON s.id = o.series_id WHERE s.name = 'Hourly'
                    """, as: Int64.self))
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE kind = 'test'", as: Int64.self) == 1)

                // A campaign of two apps, written as a run writes its ledger
                // (some devices unregistered, some failed), and config
                // refresh pushes prompted by the A/B campaign.
                try await client.exec("""
                    INSERT INTO apps (name, display_name, topic) VALUES ('shop', 'Shop', 'com.example.shop');
                    INSERT INTO devices (user_id, token, environment, app, app_version, last_seen_at)
                    SELECT id, lpad(to_hex(100000 + id), 64, '0'), 'production', 'shop', '1.0', now()
                    FROM users WHERE id % 4 = 0;
                    """)
                try await client.exec(Fixtures.campaign(name: "Two apps"))
                try await client.exec("""
                    UPDATE campaigns SET apps = ARRAY['default', 'shop'], status = 'running', started_at = now()
                    WHERE name = 'Two apps';
                    INSERT INTO deliveries (campaign_id, device_id, user_id, status, last_error, sent_at, apns_id, attempts)
                    SELECT c.id, d.id, d.user_id,
                           CASE WHEN d.id % 11 = 0 THEN 'invalid' WHEN d.id % 13 = 0 THEN 'failed' ELSE 'sent' END,
                           CASE WHEN d.id % 11 = 0 THEN 'Unregistered' WHEN d.id % 13 = 0 THEN 'InternalServerError' END,
                           CASE WHEN d.id % 11 <> 0 AND d.id % 13 <> 0 THEN now() - make_interval(secs => d.id % 50) END,
                           gen_random_uuid(), 1
                    FROM campaigns c, devices d WHERE c.name = 'Two apps';
                    UPDATE campaigns SET status = 'completed', completed_at = now() WHERE name = 'Two apps';
                    INSERT INTO deliveries (device_id, user_id, status, kind, config_etag, prompted_by, sent_at, apns_id, attempts)
                    SELECT d.id, d.user_id, 'sent', 'config_refresh', 'etag-7', \(ab), now(), gen_random_uuid(), 1
                    FROM devices d WHERE d.id % 4 = 0;
                    """)
                let twoApps = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Two apps'", as: Int64.self))
                #expect(try await client.scalar("""
                    SELECT count(DISTINCT dv.app) FROM delivery_status d JOIN devices dv ON dv.id = d.device_id WHERE d.campaign_id = \(twoApps)
                    """, as: Int64.self) == 2)

                // What the devices and the shop said: receipts, replies
                // (buttons, opens, typed answers), and conversions.
                try await client.exec("""
                    INSERT INTO receipts (delivery_id, campaign_id, device_id, arrived_at, sealed_opened, media_attached)
                    SELECT d.id, d.campaign_id, d.device_id, d.sent_at + make_interval(secs => 1 + d.id % 7),
                           CASE WHEN dv.public_key IS NOT NULL THEN d.id % 5 <> 0 END,
                           CASE WHEN c.media_url IS NOT NULL THEN d.id % 4 <> 0 END
                    FROM delivery_status d JOIN devices dv ON dv.id = d.device_id JOIN campaigns c ON c.id = d.campaign_id
                    WHERE d.kind = 'campaign' AND d.status = 'sent' AND d.id % 2 = 0;
                    INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at)
                    SELECT gen_random_uuid(), d.id, d.campaign_id, d.device_id, d.user_id,
                           CASE WHEN c.kind = 'feedback' THEN 'comment'
                                WHEN d.id % 3 = 0 THEN 'love_it' WHEN d.id % 3 = 1 THEN 'dont_care'
                                ELSE 'com.apple.UNNotificationDefaultActionIdentifier' END,
                           CASE WHEN c.kind = 'feedback' THEN 'answer ' || d.id END,
                           least(now(), d.sent_at + interval '1 second')
                    FROM delivery_status d JOIN campaigns c ON c.id = d.campaign_id
                    WHERE d.kind IN ('campaign', 'test') AND d.status = 'sent' AND (d.kind = 'test' OR d.id % 5 < 3);
                    INSERT INTO conversions (user_id, event, occurred_at, amount, currency, idempotency_key)
                    SELECT id, 'purchase', now(), 20.00, 'EUR', 'k' || id FROM users WHERE id % 3 = 0
                    """)
                // Codes drawn from a pool, as a run draws them, one redeemed.
                try await client.exec("""
                    INSERT INTO code_pools (name) VALUES ('prune');
                    INSERT INTO pool_codes (pool, code) SELECT 'prune', 'P-' || n FROM generate_series(1, 10) n;
                    UPDATE pool_codes SET campaign_id = \(ab), user_id = substr(code, 3)::bigint, drawn_at = now()
                    WHERE substr(code, 3)::int <= 5;
                    INSERT INTO conversions (user_id, event, occurred_at, amount, currency, idempotency_key, code)
                    VALUES (1, 'purchase', now(), 5.00, 'EUR', 'code-1', 'P-1')
                    """)

                // A journey some users went through, one held out, a few at its goal.
                try await client.exec("""
                    INSERT INTO journeys (id, name, first_step, entry, entry_event, goal_event, holdout_pct)
                    VALUES (1, 'After the order', 'listen', 'conversion', 'order_delivered', 'purchase', 10);
                    INSERT INTO journey_steps (journey_id, version, step, kind, timeout) VALUES (1, 1, 'listen', 'wait_for', '2 days');
                    INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step)
                    VALUES (1, 1, 'listen', 1, 'converted', '{"event": "purchase"}', NULL), (1, 1, 'listen', 2, 'timeout', '{}', NULL);
                    INSERT INTO journey_members (id, journey_id, version, user_id, step, state, due_at, moves)
                    SELECT id, 1, 1, id, 'listen', CASE WHEN id % 7 = 0 THEN 'held_out' WHEN id % 3 = 0 THEN 'goal' ELSE 'active' END,
                           CASE WHEN id % 7 <> 0 AND id % 3 <> 0 THEN now() + interval '1 day' END,
                           CASE WHEN id % 7 <> 0 AND id % 3 = 0 THEN 1 ELSE 0 END
                    FROM users WHERE id <= 30;
                    INSERT INTO journey_transitions (member_id, seq, journey_id, from_step, position, kind, to_step)
                    SELECT id, 1, 1, 'listen', NULL, 'goal', NULL FROM journey_members WHERE state = 'goal';
                    """)

                // Everything finished, the frequency window short: prunable a moment later.
                try await client.exec("UPDATE settings SET frequency_window = '1 second'")
                try await Task.sleep(for: .seconds(2))
                let views = try await Self.analystViews(client)
                #expect(views.count >= 17, "\(views)")
                let before = try await Self.snapshot(client, views: views)
                for view in views {
                    #expect(!(before[view] ?? []).isEmpty,
                            "analyst.\(view) is empty before the prune: give the fixture what this view shows")
                }

                var penv = ProcessInfo.processInfo.environment
                penv["DATABASE_URL"] = database.description
                penv["LOG_LEVEL"] = "warning"
                let prune = try Child(name: "prune", arguments: ["prune", "--older-than", "1s"], environment: penv, directory: dir)
                let status = try await prune.wait(limit: .seconds(60))
                let out = prune.text()
                #expect(status == 0, "herald prune exited \(status)\n\(out)")
                for campaign in [ab, occurrence, twoApps] {
                    #expect(out.contains("pruned campaign \(campaign) "), "campaign \(campaign) not pruned:\n\(out)")
                }
                let ask = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Ask'", as: Int64.self))
                #expect(out.contains("pruned campaign \(ask) "), "\(out)")
                #expect(try await client.scalar("""
                    SELECT count(*) FROM delivery_status WHERE campaign_id IN (\(ab), \(ask), \(occurrence), \(twoApps))
                    """, as: Int64.self) == 0)

                let after = try await Self.snapshot(client, views: views)
                for view in views {
                    let was = before[view] ?? [], now = after[view] ?? []
                    let lost = was.filter { !now.contains($0) }, gained = now.filter { !was.contains($0) }
                    #expect(was == now, """
                        analyst.\(view) changed with the prune: \(lost.count) rows lost, \(gained.count) gained
                        lost: \(lost.prefix(5).joined(separator: "\n      "))
                        gained: \(gained.prefix(5).joined(separator: "\n        "))
                        """)
                }
                print("prune figures: \(views.count) analyst views, \(before.values.map(\.count).reduce(0, +)) rows, the same after pruning 4 campaigns")
            }
        }
    }
}
