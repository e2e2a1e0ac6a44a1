import Foundation
import HeraldCore
import PostgresNIO
import Store
import TestSupport
import Testing

/// A campaign's pace in SQL (Sql/0020): written and checked by the marketer's
/// row, and the send slots every worker takes from one row per campaign.
@Suite("Pace")
struct PaceTests {
    func campaign(_ client: Database, devices: Int = 0) async throws -> Int64 {
        try await client.exec(Fixtures.catalogue)
        if devices > 0 { try await client.exec(Fixtures.audience(count: devices)) }
        try await client.exec(Fixtures.campaign(name: "Paced"))
        return try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Paced'", as: Int64.self))
    }

    @Test func aPaceIsCheckedWhenWritten() async throws {
        try await TestDatabase.with { client, _ in
            let id = try await campaign(client)
            func set(_ assignment: String) async -> String? {
                await client.refusal("UPDATE campaigns SET \(assignment) WHERE id = \(id)")
            }
            #expect(await set("rate_per_minute = 600") == nil)
            #expect(await set("rate_per_minute = 0")?.contains("campaign rate_per_minute must be from 1 to 1000000 a minute") == true)
            #expect(await set("rate_per_minute = NULL, finish_within = '30 seconds'")?.contains("finish_within must be from 1 minute to 7 days") == true)
            #expect(await set("rate_per_minute = NULL, finish_within = '8 days'")?.contains("finish_within must be from 1 minute to 7 days") == true)
            #expect(await set("rate_per_minute = 600, finish_within = '2 hours'")?.contains("sets rate_per_minute or finish_within, not both") == true)
            #expect(await set("rate_per_minute = NULL, finish_within = '2 hours'") == nil)
        }
    }

    @Test func slotsFollowOneAnotherAcrossCallers() async throws {
        try await TestDatabase.with { client, _ in
            let id = try await campaign(client)
            let store = CampaignStore(client: client, logger: TestDatabase.logger)
            #expect(try await store.reservePace(campaign: id, count: 10) == nil)  // no pace: no slots
            // Six a minute: slots 10 s apart, so a loaded machine's pause between
            // two calls cannot use up the first caller's slots.
            try await client.exec("UPDATE campaigns SET rate_per_minute = 6 WHERE id = \(id)")
            let first = try #require(try await store.reservePace(campaign: id, count: 10))
            #expect(abs(first.spacing - 10) < 1e-9)
            #expect(first.firstIn <= 0.001)
            // The first ten end 100 s after the first slot; the next caller starts there
            // (less the time between the calls), not at once.
            let taken = "SELECT extract(epoch FROM next_slot - started_at)::float8 FROM campaign_pace WHERE campaign_id = \(id)"
            #expect(abs((try await client.scalar(taken, as: Double.self) ?? 0) - 100.0) < 1e-6)
            let second = try #require(try await store.reservePace(campaign: id, count: 5))
            #expect(second.firstIn > 90 && second.firstIn <= 100, "\(second)")
            // Ten calls at once (ten workers) never take the same slot: the
            // next free slot moves on by all thirty of theirs.
            let slotSQL = "SELECT extract(epoch FROM next_slot)::float8 FROM campaign_pace WHERE campaign_id = \(id)"
            let before = try #require(try await client.scalar(slotSQL, as: Double.self))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<10 {
                    group.addTask { _ = try await store.reservePace(campaign: id, count: 3) }
                }
                try await group.waitForAll()
            }
            let after = try #require(try await client.scalar(slotSQL, as: Double.self))
            #expect(abs(after - before - 300) < 1e-6, "\(after - before) s of slots for 30 notifications at 10 s")
        }
    }

    @Test func anIdleCampaignEarnsNoBurst() async throws {
        try await TestDatabase.with { client, _ in
            let id = try await campaign(client)
            try await client.exec("UPDATE campaigns SET rate_per_minute = 60 WHERE id = \(id)")
            let store = CampaignStore(client: client, logger: TestDatabase.logger)
            _ = try await store.reservePace(campaign: id, count: 1)
            // A run killed long ago, or a pause: the next slot lies in the past.
            try await client.exec("UPDATE campaign_pace SET next_slot = now() - interval '1 hour' WHERE campaign_id = \(id)")
            let now = try #require(try await store.reservePace(campaign: id, count: 100))
            #expect(now.firstIn <= 0.001 && abs(now.spacing - 1) < 1e-9)  // from now on, one a second
            let next = try #require(try await store.reservePace(campaign: id, count: 1))
            #expect(next.firstIn > 90 && next.firstIn <= 100, "\(next)")  // less the time between the calls
        }
    }

    @Test func finishWithinSpreadsWhatIsLeftOverTheWindow() async throws {
        try await TestDatabase.with { client, _ in
            let id = try await campaign(client, devices: 600)
            try await client.exec("UPDATE campaigns SET status = 'running', finish_within = '10 minutes' WHERE id = \(id)")
            try await client.exec("""
                INSERT INTO deliveries (campaign_id, device_id, user_id, status)
                SELECT \(id), d.id, d.user_id, 'queued' FROM devices d
                """)
            let store = CampaignStore(client: client, logger: TestDatabase.logger)
            let slots = try #require(try await store.reservePace(campaign: id, count: 1))
            // 600 queued over 10 minutes: 60 a minute, one a second.
            #expect(abs(slots.spacing - 1) < 0.01, "\(slots)")
        }
    }

    @Test func aPacesDurationInAMarketersWords() {
        #expect(CampaignPace.perMinute(600).duration(audience: 601) == 60)
        #expect(CampaignPace.perMinute(600).ratePerMinute(audience: 10) == 600)
        #expect(CampaignPace.within(7_200).ratePerMinute(audience: 1_000) == 9)
        #expect(CampaignPace.within(7_200).duration(audience: 5) == 7_200)
        #expect(CampaignPace.words(9_000) == "2 h 30 min")
        #expect(CampaignPace.words(45) == "45 s")
        #expect(CampaignPace.words(90_061) == "1 d 1 h")
    }
}
