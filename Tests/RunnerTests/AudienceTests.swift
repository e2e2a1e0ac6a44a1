import Foundation
import PostgresNIO
import Runner
import Store
import Testing
import TestSupport

@Suite("Segments select exactly their devices")
struct AudienceTests {
    static let people = """
        INSERT INTO users (external_id, locale, time_zone, attributes, opted_out_at) VALUES
            ('u1', 'en', 'UTC', '{"tier": "gold", "orders": 5}', NULL),
            ('u2', 'zh-Hans', 'Asia/Shanghai', '{"tier": "free", "orders": 0}', NULL),
            ('u3', 'fr', 'Europe/Paris', '{"tier": "silver", "orders": "many"}', NULL),
            ('u4', 'en-GB', 'Europe/London', '{"tier": "gold"}', now()),
            ('u5', 'en', 'UTC', '{"tier": "gold", "orders": 9}', NULL),
            ('u6', 'de', 'Europe/Berlin', '{}', NULL);
        INSERT INTO devices (user_id, token, environment, public_key, key_id, app_version, last_seen_at, invalidated_at)
        SELECT u.id, lpad(to_hex(u.id), 64, 'a'), v.env, v.pk, v.kid, v.app, now() - v.seen, v.invalid
        FROM (VALUES
            ('u1', 'production', 'auYyK/2a0xkuiQUaAZhUtXUoa9++6wkcfSdWJjLLkUc=', 'k1', '2.3.0', interval '1 day', NULL::timestamptz),
            ('u2', 'production', NULL, NULL, '1.9.4', interval '40 days', NULL),
            ('u3', 'sandbox', NULL, NULL, '2.10.1', interval '3 days', NULL),
            ('u4', 'production', NULL, NULL, '2.3.0', interval '1 day', NULL),
            ('u5', 'production', NULL, NULL, '2.3.0', interval '1 day', now()),
            ('u6', 'production', NULL, NULL, NULL, NULL, NULL)
        ) AS v(ext, env, pk, kid, app, seen, invalid)
        JOIN users u ON u.external_id = v.ext;
        """

    @Test(arguments: [
        ("{}", ["u1", "u2", "u3", "u6"]),
        (#"{"all": [{"attr": "locale", "op": "in", "value": ["en", "en-GB"]}]}"#, ["u1"]),
        (#"{"all": [{"attr": "locale", "op": "prefix", "value": "zh"}]}"#, ["u2"]),
        (#"{"all": [{"attr": "attributes.tier", "op": "in", "value": ["gold", "silver"]}]}"#, ["u1", "u3"]),
        (#"{"all": [{"attr": "attributes.tier", "op": "not_in", "value": ["gold", "silver"]}]}"#, ["u2", "u6"]),
        (#"{"all": [{"attr": "attributes.orders", "op": ">", "value": 3}]}"#, ["u1"]),
        (#"{"all": [{"attr": "attributes.tier", "op": "exists"}]}"#, ["u1", "u2", "u3"]),
        (#"{"all": [{"attr": "attributes.tier", "op": "!=", "value": "gold"}]}"#, ["u2", "u3", "u6"]),
        (#"{"all": [{"attr": "app_version", "op": ">=", "value": "2.4"}]}"#, ["u3"]),
        (#"{"all": [{"attr": "app_version", "op": "<", "value": "2"}]}"#, ["u2"]),
        (#"{"all": [{"attr": "last_seen", "op": "within", "value": "7 days"}]}"#, ["u1", "u3"]),
        (#"{"all": [{"attr": "last_seen", "op": "not_within", "value": "30 days"}]}"#, ["u2", "u6"]),
        (#"{"not": {"attr": "locale", "op": "=", "value": "en"}}"#, ["u2", "u3", "u6"]),
        (#"{"any": [{"attr": "environment", "op": "=", "value": "sandbox"}, {"attr": "attributes.tier", "op": "=", "value": "free"}]}"#, ["u2", "u3"]),
        (#"{"all": [{"attr": "has_key", "op": "=", "value": true}]}"#, ["u1"]),
        (#"{"all": [{"attr": "time_zone", "op": "prefix", "value": "Europe/"}, {"attr": "external_id", "op": "!=", "value": "u6"}]}"#, ["u3"]),
    ])
    func ruleSelects(rule: String, expected: [String]) async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Self.people)
            try await client.query("INSERT INTO segments (name, rule) VALUES ('s', \(rule)::jsonb)", logger: TestDatabase.logger)
            try await client.exec(Fixtures.campaign(name: "C", segment: "s"))
            let summary = try await dryRun(client)
            #expect(summary.campaigns.first?.failure == nil)
            var got: [String] = []
            for try await ext in try await client.query("""
                SELECT u.external_id FROM delivery_status d JOIN users u ON u.id = d.user_id ORDER BY 1
                """, logger: TestDatabase.logger).decode(String.self) {
                got.append(ext)
            }
            #expect(got == expected, "rule \(rule)")
        }
    }

    @Test func quietHoursDeferNotDrop() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            // Quiet hours: the hour around now in UTC. Tokyo is 9 hours away, outside them.
            try await client.exec("""
                UPDATE settings SET quiet_hours_start = (now() AT TIME ZONE 'UTC' - interval '1 hour')::time,
                                    quiet_hours_end = (now() AT TIME ZONE 'UTC' + interval '1 hour')::time;
                INSERT INTO users (external_id, time_zone) VALUES ('night', 'UTC'), ('day', 'Asia/Tokyo');
                INSERT INTO devices (user_id, token) SELECT id, lpad(to_hex(id), 64, '0') FROM users;
                """)
            try await client.exec(Fixtures.campaign(name: "Q"))
            try await client.exec("UPDATE campaigns SET quiet_hours = true")
            let summary = try await dryRun(client)
            #expect(summary.campaigns.first?.snapshot?.deferred == 1)
            #expect(try await client.scalar("""
                SELECT u.external_id FROM delivery_status d JOIN users u ON u.id = d.user_id WHERE d.not_before > now()
                """, as: String.self) == "night")
            // Deferred to the end of the quiet hours, about an hour from now.
            let wait = try await client.scalar("SELECT extract(epoch FROM max(not_before) - now())::float8 FROM delivery_status", as: Double.self)
            #expect((3000.0...3700.0).contains(wait ?? 0))
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'queued'", as: Int64.self) == 2)
        }
    }

    @Test func frequencyCapSkipsRecentlyNotifiedUsers() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 4))
            try await client.exec("UPDATE settings SET frequency_cap = 2, frequency_window = '24 hours'")
            // Two earlier campaigns already reached user u1 in the last day; a third, older one does not count.
            try await client.exec(Fixtures.campaign(name: "Old 1"))
            try await client.exec(Fixtures.campaign(name: "Old 2"))
            try await client.exec(Fixtures.campaign(name: "Old 3"))
            try await client.exec("""
                UPDATE campaigns SET status = 'completed';
                INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
                SELECT c.id, d.id, d.user_id, 'sent', CASE WHEN c.name = 'Old 3' THEN now() - interval '3 days' ELSE now() - interval '1 hour' END
                FROM campaigns c, devices d JOIN users u ON u.id = d.user_id
                WHERE u.external_id = 'u1' OR (u.external_id = 'u2' AND c.name <> 'Old 2');
                """)
            try await client.exec(Fixtures.campaign(name: "New"))
            try await client.exec("UPDATE campaigns SET frequency_capped = true WHERE name = 'New'")
            let summary = try await dryRun(client)
            let new = try #require(summary.campaigns.first { $0.name == "New" })
            #expect(new.snapshot?.inserted == 4)
            #expect(new.snapshot?.skipped == 1)
            #expect(new.printed == 3)
            #expect(try await client.scalar("""
                SELECT u.external_id || ': ' || d.last_error FROM delivery_status d JOIN users u ON u.id = d.user_id
                JOIN campaigns c ON c.id = d.campaign_id WHERE c.name = 'New' AND d.status = 'skipped'
                """, as: String.self) == "u1: frequency cap reached")
        }
    }
}
