import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Store
import Testing
import TestSupport

/// Holdouts and lift (Sql/0025), checked against data whose truth is known: a
/// real run holds out part of the audience (the simulator's own log shows
/// none of them), then conversions are drawn for the users with and without
/// a planted effect, and analyst.lift must find it (its interval covering the
/// planted lift) or find nothing (an A/A split), as often as a 95% interval
/// and a 5% test should.
@Suite("Holdouts and lift", .serialized)
struct LiftTests {
    /// Users of the campaign: id and whether they were treated.
    func arms(_ client: Database, campaign: Int64) async throws -> [(user: Int64, treated: Bool)] {
        var out: [(Int64, Bool)] = []
        for try await (user, treated) in try await client.query("""
            SELECT user_id, bool_or(status <> 'held_out') FROM delivery_status WHERE campaign_id = \(campaign) GROUP BY user_id ORDER BY user_id
            """).decode((Int64, Bool).self) {
            out.append((user, treated))
        }
        return out
    }

    /// Replaces the conversions: each user converts (a purchase an hour
    /// after assignment) with `base`, plus `planted` when treated.
    func draw(_ client: Database, _ users: [(user: Int64, treated: Bool)], base: Double, planted: Double,
              seed: UInt64) async throws {
        var draws = SplitMix64(seed: seed)  // the same draws on every machine
        let converting = users.filter { draws.nextUnit() < base + ($0.treated ? planted : 0) }.map(\.user)
        try await client.exec("TRUNCATE conversions")
        try await client.query("""
            INSERT INTO conversions (user_id, event, occurred_at, amount, currency, idempotency_key)
            SELECT u, 'purchase', now() + interval '1 hour', 20.00, 'EUR', 'c-' || u FROM unnest(\(converting)) u
            """, logger: TestDatabase.logger)
    }

    struct Lift {
        var treated: Int64, heldOut: Int64, lift: Double, low: Double, high: Double, p: Double?, verdict: String
    }

    func lift(_ client: Database, campaign: Int64, variant: String? = nil) async throws -> Lift? {
        for try await (n1, n0, lift, low, high, p, verdict) in try await client.query("""
            SELECT treated, held_out, lift_pts::float8, lift_low_pts::float8, lift_high_pts::float8, p_value, verdict
            FROM analyst.lift WHERE campaign_id = \(campaign) AND variant IS NOT DISTINCT FROM \(variant)
            """).decode((Int64, Int64, Double, Double, Double, Double?, String).self) {
            return Lift(treated: n1, heldOut: n0, lift: lift, low: low, high: high, p: p, verdict: verdict)
        }
        return nil
    }

    @Test func theIntervalCoversAPlantedLiftAndAnAASplitShowsNone() async throws {
        try await TestDatabase.with { client, _ in
            let users = 6_000
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: users))
            try await client.exec(Fixtures.campaign(name: "Sale"))
            try await client.exec("""
                UPDATE campaigns SET holdout_pct = 50, conversion_event = 'purchase', attribution_window = '1 day'
                """)
            let campaign = try #require(try await client.scalar("SELECT id FROM campaigns", as: Int64.self))
            let run = try await withSimulator { sim in
                let run = try await sendRun(client, apns: sim.clientConfiguration, concurrency: 200)
                // Held-out users received nothing: the simulator's own log has only the treated.
                let accepted = Set(await sim.simulator.accepted.map(\.deviceToken))
                var treatedTokens = Set<String>()
                for try await token in try await client.query("""
                    SELECT dv.token FROM delivery_status d JOIN devices dv ON dv.id = d.device_id
                    WHERE d.campaign_id = \(campaign) AND d.status <> 'held_out'
                    """).decode(String.self) { treatedTokens.insert(token) }
                #expect(accepted == treatedTokens)
                return run
            }
            let arms = try await arms(client, campaign: campaign)
            let heldOut = arms.filter { !$0.treated }.count
            #expect(run.figures.sent == users - heldOut)
            #expect(abs(Double(heldOut) / Double(users) - 0.5) < 0.03, "\(heldOut) of \(users) held out")
            #expect(try await client.scalar("""
                SELECT count(*) FROM delivery_status WHERE status = 'held_out' AND last_error = 'held out to measure the campaign''s effect'
                """, as: Int64.self) == Int64(heldOut))

            // A planted lift of 3 points on a 10% base, twenty draws.
            var covered = 0
            var found = 0
            var measured: [Double] = []
            for seed in 1...20 as ClosedRange<UInt64> {
                try await draw(client, arms, base: 0.10, planted: 0.03, seed: seed)
                let l = try #require(try await lift(client, campaign: campaign))
                #expect(l.treated + l.heldOut == Int64(users))
                if l.low <= 3 && 3 <= l.high { covered += 1 }
                if (l.p ?? 1) < 0.05 { found += 1 }
                measured.append(l.lift)
            }
            // A/A: the same campaign, no effect.
            var falseAlarms = 0
            for seed in 101...120 as ClosedRange<UInt64> {
                try await draw(client, arms, base: 0.10, planted: 0, seed: seed)
                let l = try #require(try await lift(client, campaign: campaign))
                if (l.p ?? 1) < 0.05 { falseAlarms += 1 }
                if seed == 101 { #expect(l.verdict.hasPrefix("no measurable effect yet") || (l.p ?? 1) < 0.05, "\(l.verdict)") }
            }
            let mean = measured.reduce(0, +) / Double(measured.count)
            print("lift: planted 3.00 points on 10% (6,000 users, half held out): measured mean \(String(format: "%.2f", mean)) points, interval covered it in \(covered) of 20 draws, significant in \(found) of 20; A/A: \(falseAlarms) of 20 false alarms at p < 0.05")
            #expect(covered >= 17, "a 95% interval covered the planted lift in \(covered) of 20 draws")
            #expect(found >= 14, "3 points at these sizes is found most of the time (power about 0.9): \(found) of 20")
            #expect(falseAlarms <= 3, "an A/A split showed an effect in \(falseAlarms) of 20 draws")
        }
    }

    @Test func variantsAndTheGlobalControlGroupCompose() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 2_000))
            try await client.exec("UPDATE settings SET control_group_pct = 10")
            for name in ["First", "Second"] { try await client.exec(Fixtures.campaign(name: name)) }
            try await client.exec("""
                UPDATE campaigns SET conversion_event = 'purchase';
                UPDATE campaigns SET holdout_pct = 20 WHERE name = 'Second';
                INSERT INTO campaign_variants (campaign_id, name, share, content)
                SELECT id, v, 50, '{"en": {"title": "Hi", "body": "There"}}' FROM campaigns, unnest(ARRAY['A', 'B']) v
                WHERE name = 'Second'
                """)
            try await withSimulator { sim in _ = try await sendRun(client, apns: sim.clientConfiguration) }
            // The control group is the same users in both campaigns, and none of them got anything.
            let control = try await client.query("""
                SELECT c.name, count(*) FROM delivery_status d JOIN campaigns c ON c.id = d.campaign_id
                WHERE d.last_error = 'global control group' GROUP BY c.name ORDER BY c.name
                """).decode((String, Int64).self)
            var byCampaign: [String: Int64] = [:]
            for try await (name, n) in control { byCampaign[name] = n }
            #expect(byCampaign["First"] == byCampaign["Second"] && (160...240).contains(byCampaign["First"] ?? 0), "\(byCampaign)")
            #expect(try await client.scalar("""
                SELECT count(*) FROM (SELECT user_id FROM delivery_status WHERE last_error = 'global control group'
                                      GROUP BY user_id HAVING count(*) = 2) both_
                """, as: Int64.self) == byCampaign["First"])
            // Second: about 10% + 20% of the rest held out; each variant against the same held out.
            let second = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Second'", as: Int64.self))
            try await client.exec("""
                INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
                SELECT user_id, 'purchase', now() + interval '1 minute', 'k' || user_id
                FROM delivery_status WHERE campaign_id = \(second) AND user_id % 7 = 0
                """)
            let whole = try #require(try await lift(client, campaign: second))
            let a = try #require(try await lift(client, campaign: second, variant: "A"))
            let b = try #require(try await lift(client, campaign: second, variant: "B"))
            #expect(a.heldOut == whole.heldOut && b.heldOut == whole.heldOut)
            #expect(a.treated + b.treated == whole.treated)
            #expect((500...620).contains(whole.heldOut), "\(whole.heldOut) held out of 2000")
            #expect(try await client.scalar("""
                SELECT count(*) FROM delivery_status WHERE campaign_id = \(second) AND status = 'held_out' AND variant IS NOT NULL
                """, as: Int64.self) == 0)
        }
    }

    @Test func holdoutsAndConversionsAreCheckedWhenWritten() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 1))
            try await client.exec(Fixtures.campaign(name: "C"))
            let refusals: [(String, String)] = [
                ("UPDATE campaigns SET holdout_pct = 60", "campaign holdout_pct must be from 0 to 50 (percent of users)"),
                ("UPDATE campaigns SET attribution_window = '10 minutes'", "campaign attribution_window must be from 1 hour to 90 days"),
                ("UPDATE campaigns SET conversion_event = 'made a purchase'", "campaign conversion_event: 1 to 100 characters, no spaces"),
                ("UPDATE settings SET control_group_pct = 25", "control_group_pct must be from 0 to 20 (percent of users)"),
                ("INSERT INTO conversions (user_id, event, occurred_at, currency, idempotency_key) SELECT id, 'buy', now(), 'EUR', 'k' FROM users",
                 "conversion currency: ISO 4217 such as EUR, with an amount"),
            ]
            for (sql, reason) in refusals {
                let refusal = await client.refusal(sql)
                #expect(refusal?.contains(reason) == true, "\(sql): \(refusal ?? "accepted")")
            }
        }
    }
}
