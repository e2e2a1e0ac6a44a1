import Foundation
import HeraldCore
import Runner
import Store
import TestSupport
import Testing

/// Each user's best hour (Sql/0039), as the run's own snapshot writes it:
/// the hour of most of their engagement in their own zone, spread over
/// the hour's minutes; quiet hours still hold; too little history or a best
/// hour after the expiry gets the campaign's own time; a variant can ask
/// for it while another keeps the fixed time, for an A/B comparison.
@Suite("Each user's best hour", .serialized)
struct BestHourTests {
    /// u1…u10 in Paris engage at 19:10 on five days; u11 in New York at
    /// 03:10 (inside the quiet hours, 03:00–03:30); u12 once only.
    static let history = """
        INSERT INTO users (external_id, locale, time_zone)
        SELECT 'u' || n, 'en', CASE WHEN n <= 10 THEN 'Europe/Paris' WHEN n = 11 THEN 'America/New_York' ELSE 'Asia/Tokyo' END
        FROM generate_series(1, 12) n;
        INSERT INTO devices (user_id, token, environment) SELECT id, lpad(to_hex(id), 64, '0'), 'production' FROM users;
        UPDATE settings SET quiet_hours_start = '03:00', quiet_hours_end = '03:30';
        INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
        SELECT u.id, 'purchase',
               ((current_date - d) + time '19:10') AT TIME ZONE u.time_zone - CASE WHEN u.external_id = 'u11' THEN interval '16 hours' ELSE interval '0' END,
               u.external_id || '-' || d
        FROM users u CROSS JOIN generate_series(1, 5) d
        WHERE u.external_id <> 'u12';
        INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
        SELECT id, 'purchase', now() - interval '2 days', 'once' FROM users WHERE external_id = 'u12';
        """

    /// Each device's not_before as its user's clock shows it, and how far from the fallback.
    static func schedule(_ client: Database, campaign: Int64) async throws -> [String: (hour: Int, minute: Int, fromFallback: Double, device: Int64)] {
        var out: [String: (Int, Int, Double, Int64)] = [:]
        for try await (user, hour, minute, off, device) in try await client.query("""
            SELECT u.external_id, extract(hour FROM d.not_before AT TIME ZONE u.time_zone)::int,
                   extract(minute FROM d.not_before AT TIME ZONE u.time_zone)::int,
                   abs(extract(epoch FROM d.not_before - herald_quiet_until(u.time_zone, now(), st.quiet_hours_start, st.quiet_hours_end)))::float8,
                   d.device_id
            FROM delivery_status d JOIN users u ON u.id = d.user_id CROSS JOIN settings st
            WHERE d.campaign_id = \(campaign)
            """, logger: TestDatabase.logger).decode((String, Int32, Int32, Double, Int64).self) {
            out[user] = (Int(hour), Int(minute), off, device)
        }
        return out
    }

    static func snapshot(_ client: Database, _ name: String) async throws -> Int64 {
        let id = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = '\(name)'", as: Int64.self))
        let stores = RunStores(client: client, logger: TestDatabase.logger)
        _ = try await stores.audience.snapshot(try await stores.campaigns.loadCampaign(id), start: true)
        return id
    }

    static func campaign(_ name: String, bestHour: Bool, expires: String = "NULL") -> String {
        """
        INSERT INTO campaigns (name, kind, status, content, category_id, quiet_hours, frequency_capped, best_hour, expires_at)
        VALUES ('\(name)', 'feedback', 'scheduled', '{"en": {"title": "Hi", "body": "How was it?"}}', 'feedback.v1', true, false,
                \(bestHour), \(expires))
        """
    }

    @Test func eachUserAtTheirHourQuietHoursHoldAndTooLittleHistoryGetsTheCampaignsTime() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Self.history)
            #expect(try await client.scalar("SELECT best_hour FROM analyst.best_hours WHERE user_external_id = 'u1'", as: Int32.self) == 19)
            #expect(try await client.scalar("SELECT best_hour FROM analyst.best_hours WHERE user_external_id = 'u11'", as: Int32.self) == 3)
            #expect(try await client.scalar("SELECT count(*) FROM analyst.best_hours WHERE user_external_id = 'u12'", as: Int64.self) == 0)

            try await client.exec(Self.campaign("Best", bestHour: true))
            let best = try await Self.schedule(client, campaign: try await Self.snapshot(client, "Best"))
            #expect(best.count == 12, "nobody is dropped for lack of history")
            for n in 1...10 {
                let s = try #require(best["u\(n)"])
                #expect(s.hour == 19 && s.minute == Int(s.device % 60), "u\(n): \(s)")
                #expect(s.fromFallback < 86_400 + 60)
            }
            // 03:mm in New York is inside the quiet hours until 03:30.
            let u11 = try #require(best["u11"])
            #expect(u11.hour == 3 && u11.minute >= 30, "\(u11)")
            // One event is too little history: the campaign's own time.
            #expect(try #require(best["u12"]).fromFallback < 5)

            // A best hour after the campaign expires: the campaign's own time.
            try await client.exec(Self.campaign("Soon over", bestHour: true, expires: "now() + interval '20 seconds'"))
            let soon = try await Self.schedule(client, campaign: try await Self.snapshot(client, "Soon over"))
            #expect(soon.values.allSatisfy { $0.fromFallback < 5 }, "\(soon)")
        }
    }

    @Test func aVariantAtTheBestHourBesideOneAtAFixedTimeIsAnABComparison() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Self.history)
            try await client.exec(Self.campaign("Split", bestHour: false))
            try await client.exec("""
                INSERT INTO campaign_variants (campaign_id, name, share, content, best_hour)
                SELECT id, v.name, 50, '{"en": {"title": "Hi", "body": "How was it?"}}', v.best FROM campaigns, (VALUES ('at-best-hour', true), ('fixed', NULL::boolean)) v(name, best)
                WHERE campaigns.name = 'Split'
                """)
            let id = try await Self.snapshot(client, "Split")
            let schedule = try await Self.schedule(client, campaign: id)
            var variantOf: [String: String] = [:]
            for try await (user, variant) in try await client.query(
                "SELECT u.external_id, d.variant FROM delivery_status d JOIN users u ON u.id = d.user_id WHERE d.campaign_id = \(id)",
                logger: TestDatabase.logger).decode((String, String).self) {
                variantOf[user] = variant
            }
            var arms = [String: Int]()
            for n in 1...10 {
                let s = try #require(schedule["u\(n)"])
                let variant = try #require(variantOf["u\(n)"])
                arms[variant, default: 0] += 1
                if variant == "at-best-hour" {
                    #expect(s.hour == 19, "u\(n) \(s)")
                } else {
                    #expect(s.fromFallback < 5, "u\(n) \(s)")
                }
            }
            #expect(arms.count == 2, "both arms have users: \(arms)")
        }
    }

    /// One user's best hour (herald_best_hour, what a journey reads) answers as every user's
    /// (herald_best_hours, what a snapshot reads) does; a journey's wait until the best hour
    /// holds u1 (Paris, 19:00) until its next 19:00, and lets u12 (too little history) go on
    /// at once.
    @Test func aJourneyWaitsUntilEachUsersBestHour() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Self.history)
            #expect(try await client.scalar("""
                SELECT count(*) FROM users u LEFT JOIN herald_best_hours() b ON b.user_id = u.id
                WHERE herald_best_hour(u.id) IS DISTINCT FROM b.hour
                """, as: Int64.self) == 0)
            #expect(try await client.scalar("SELECT herald_best_hour(id) FROM users WHERE external_id = 'u1'", as: Int32.self) == 19)
            try await client.exec("""
                INSERT INTO journeys (id, name, first_step, entry, entry_event) VALUES (5, 'At their hour', 'pause', 'conversion', 'signup');
                INSERT INTO campaigns (id, name, kind, status, content, media_url, quiet_hours, journey_id) VALUES
                    (501, 'Hello', 'poster', 'scheduled', '{"en": {"title": "Hello", "body": "At your hour"}}', 'https://cdn.example.com/h.png', false, 5);
                INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id, best_hour) VALUES
                    (5, 1, 'pause', 'wait', NULL, true), (5, 1, 'hello', 'send', 501, false);
                INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES
                    (5, 1, 'pause', 1, 'next', '{}', 'hello'), (5, 1, 'hello', 1, 'next', '{}', NULL);
                UPDATE journeys SET status = 'running' WHERE id = 5;
                INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
                SELECT id, 'signup', now(), 'signup-' || id FROM users WHERE external_id IN ('u1', 'u12');
                """)
            try await withSimulator { sim in
                let run = try await JourneyRunTests.run(client, sim)
                #expect(run.journeys.claimed == 2)
                #expect(try await JourneyRunTests.accepted(client, sim) == ["Hello"])
            }
            #expect(try await client.scalar("""
                SELECT m.state || ' ' || m.step || ' ' || to_char(m.due_at AT TIME ZONE u.time_zone, 'HH24:MI')
                       || CASE WHEN m.due_at > now() AND m.due_at <= now() + interval '1 day' THEN ' within a day' ELSE '' END
                FROM journey_members m JOIN users u ON u.id = m.user_id WHERE u.external_id = 'u1'
                """, as: String.self) == "active pause 19:00 within a day")
            #expect(try await client.scalar("""
                SELECT m.state FROM journey_members m JOIN users u ON u.id = m.user_id WHERE u.external_id = 'u12'
                """, as: String.self) == "done")
        }
    }
}
