import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// `herald prune` as an operator runs it: the executable, its output, its
/// exit status and what it leaves in the database.
@Suite("herald prune")
struct PruneCommandTests {
    @Test func dryRunWritesNothingThenPruneDropsOnlyTheOldFinishedCampaign() async throws {
        try await TestDatabase.with { client, config in
            try await client.exec(Fixtures.catalogue + ";\n" + Fixtures.audience(count: 6) + ";\n"
                + Fixtures.campaign(name: "Old") + ";\n" + Fixtures.campaign(name: "Running") + ";\n" + """
                INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
                SELECT c.id, d.id, d.user_id, 'sent', now() - interval '100 days' FROM campaigns c, devices d;
                INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                SELECT gen_random_uuid(), id, campaign_id, device_id, user_id, 'love_it', now() - interval '99 days' FROM deliveries;
                UPDATE campaigns SET status = 'running';
                UPDATE campaigns SET status = 'completed', completed_at = now() - interval '100 days' WHERE name = 'Old';
                UPDATE deliveries SET updated_at = now() - interval '100 days';
                """)
            let old = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Old'", as: Int64.self))
            let funnel = "SELECT string_agg(t::text, '|' ORDER BY t::text) FROM analyst.campaign_funnel t"
            let before = try await client.scalar(funnel, as: String.self)
            var env = ProcessInfo.processInfo.environment
            env["DATABASE_URL"] = config.description
            env["LOG_LEVEL"] = "warning"
            try await withScratch { scratch in
                func prune(_ arguments: [String]) async throws -> (Int32, String) {
                    let child = try Child(name: "prune", arguments: ["prune"] + arguments, environment: env, directory: scratch)
                    let status = try await child.wait(limit: .seconds(60))
                    return (status, child.text())
                }
                let (dryStatus, dry) = try await prune(["--older-than", "90d", "--dry-run"])
                #expect(dryStatus == 0, "\(dry)")
                #expect(dry.contains("would prune campaign \(old) \"Old\""))
                #expect(!dry.contains("Running"))
                #expect(try await client.scalar("SELECT count(*) FROM pruned_campaigns", as: Int64.self) == 0)
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE campaign_id = \(old)", as: Int64.self) == 6)

                let (status, out) = try await prune(["--older-than", "90d", "--export", scratch.directory.path])
                #expect(status == 0, "\(out)")
                #expect(out.contains("pruned campaign \(old) \"Old\""))
                #expect(out.contains("6 deliveries dropped"))
                #expect(FileManager.default.fileExists(atPath: scratch.directory.appendingPathComponent("deliveries_c\(old).jsonl").path))
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE campaign_id = \(old)", as: Int64.self) == 0)
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status", as: Int64.self) == 6)
                #expect(try await client.scalar("SELECT count(*) FROM replies", as: Int64.self) == 12)
                #expect(try await client.scalar(funnel, as: String.self) == before)

                let (againStatus, again) = try await prune(["--older-than", "90d"])
                #expect(againStatus == 0)
                #expect(again.contains("no finished campaign older than 90d"))
                let (badStatus, bad) = try await prune(["--older-than", "ninety days"])
                #expect(badStatus != 0)
                #expect(bad.contains("is not an age"))
            }
        }
    }
}
