import Foundation
import PostgresNIO
import Runner
import Store
import Testing
import TestSupport

/// An audience written in slices that sending starts on (Sql/0014): every
/// device once, the campaign complete only after its last slice, a stopped
/// snapshot going on where it stopped.
@Suite("Audience snapshots in slices", .serialized)
struct SnapshotSliceTests {
    /// 3,000 devices sent by one run in slices of 200, 600 and 2,400 device
    /// ids, each next slice started within `lead` rows of the claims (nil: the default).
    static func sendSliced(_ client: Database, campaign: String, lead: Int? = nil) async throws {
        try await client.exec(Fixtures.catalogue)
        try await client.exec(Fixtures.audience(count: 3000))
        try await client.exec(Fixtures.campaign(name: campaign))
        try await withSimulator { sim in
            // Outcomes written every 10 (a ledger row's `sent_at` is its write's time).
            var options = RunOptions(topic: sim.clientConfiguration.topic, batchSize: 100, concurrency: 50, recordEvery: 10)
            options.firstSnapshotSlice = 200
            if let lead { options.snapshotLead = lead }
            let summary = try await sendRun(client, apns: sim.clientConfiguration, options: options)
            #expect(summary.figures.sent == 3000)
            #expect(summary.figures.targeted == 3000)
            #expect(summary.campaigns.first?.snapshot?.inserted == 3000)
            #expect(summary.campaigns.first?.snapshot?.queued == 3000)
            #expect(summary.campaigns.first?.completed == true)
            let accepted = await sim.simulator.accepted
            #expect(accepted.count == 3000)
            #expect(Set(accepted.map(\.deviceToken)).count == 3000)
        }
    }

    @Test func aLargeAudienceIsSentWhileItsSlicesAreWritten() async throws {
        try await TestDatabase.with { client, _ in
            try await Self.sendSliced(client, campaign: "Big")
            // One ledger row per device, all sent; the snapshot is complete.
            #expect(try await client.scalar("SELECT count(DISTINCT device_id) FROM delivery_status WHERE status = 'sent'", as: Int64.self) == 3000)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status", as: Int64.self) == 3000)
            #expect(try await client.scalar("SELECT status FROM campaigns", as: String.self) == "completed")
            #expect(try await client.scalar("SELECT snapshot_through IS NULL AND snapshot_at IS NOT NULL FROM campaigns", as: Bool.self) == true)
            // Several statements wrote it: one id range each (device ids
            // 1–3000 in slices of 200, 600 and 2,400 ids).
            #expect(try await client.scalar("SELECT count(*) FROM delivery_id_ranges", as: Int64.self) == 3)
        }
    }

    /// With a lead of 100 rows, the slices of 600 and 2,400 ids wait until the
    /// claims have read all but 100 of the rows written: the audience is
    /// written shortly before it is sent, and every device still gets one.
    @Test func theNextSliceWaitsForTheClaimsToComeWithinTheLead() async throws {
        try await TestDatabase.with { client, _ in
            try await Self.sendSliced(client, campaign: "Paced snapshot", lead: 100)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'sent'", as: Int64.self) == 3000)
            // The last slice (device ids above 800) began once the claims had
            // read at least 700 rows: of those, all but a batch claimed ahead,
            // the sends in flight and the outcomes not yet written had been
            // recorded as sent before it was written.
            let sentBefore = try await client.scalar("""
                SELECT count(*) FROM delivery_status
                WHERE sent_at < (SELECT min(created_at) FROM delivery_status WHERE device_id > 800)
                """, as: Int64.self)
            #expect((sentBefore ?? 0) >= 400, "\(sentBefore ?? 0) sent before the last slice was written")
        }
    }

    /// A frequency-capped campaign's slices leave out the users at the cap
    /// when its first slice was written (Sql/0030), found once: a send to a
    /// user between two slices does not change what a later slice writes.
    @Test func aCappedCampaignsSlicesCountTheSendsBeforeTheFirst() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 1000))
            try await client.exec("UPDATE settings SET frequency_cap = 1, frequency_window = '24 hours'")
            try await client.exec(Fixtures.campaign(name: "Earlier"))
            try await client.exec(Fixtures.campaign(name: "Tonight"))
            // Users 50 (in the first slice) and 500 (in the last) got a campaign an hour ago.
            try await client.exec("""
                UPDATE campaigns SET status = 'completed', completed_at = now() - interval '1 hour' WHERE name = 'Earlier';
                INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
                SELECT c.id, d.id, d.user_id, 'sent', now() - interval '1 hour'
                FROM campaigns c, devices d WHERE c.name = 'Earlier' AND d.id IN (50, 500);
                """)
            try await client.exec(Fixtures.campaign(name: "Capped"))
            try await client.exec("UPDATE campaigns SET frequency_capped = true WHERE name = 'Capped'")
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let id = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Capped'", as: Int64.self))
            let due = try await stores.campaigns.loadCampaign(id)

            let first = try await stores.audience.snapshot(due, start: true, firstSlice: 100)
            #expect(first.inserted == 100)
            #expect(first.skippedCapped == 1)
            #expect(try await client.scalar("SELECT cardinality(users) FROM snapshot_caps WHERE campaign_id = \(id)", as: Int64.self) == 2)

            // Between the slices another campaign reaches user 700: the cap
            // counted what was sent before the first slice, so 700 stays in.
            try await client.exec("""
                UPDATE campaigns SET status = 'running' WHERE name = 'Tonight';
                INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
                SELECT c.id, d.id, d.user_id, 'sent', now() FROM campaigns c, devices d WHERE c.name = 'Tonight' AND d.id = 700;
                """)
            var total = first
            while !total.complete { total.add(try await stores.audience.snapshot(due, start: true, firstSlice: 100)) }
            #expect(total.inserted == 1000)
            #expect(total.skippedCapped == 2)
            #expect(try await client.scalar("""
                SELECT string_agg(device_id::text || ' ' || status, ', ' ORDER BY device_id) FROM delivery_status
                WHERE campaign_id = \(id) AND device_id IN (50, 500, 700)
                """, as: String.self) == "50 skipped, 500 skipped, 700 queued")
            // The last slice leaves nothing behind.
            #expect(try await client.scalar("SELECT count(*) FROM snapshot_caps", as: Int64.self) == 0)
        }
    }

    /// A capped campaign cancelled between slices leaves no kept users behind.
    @Test func aCancelledSnapshotsCapsAreDropped() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 300))
            try await client.exec(Fixtures.campaign(name: "Capped"))
            try await client.exec("UPDATE campaigns SET frequency_capped = true")
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let id = try #require(try await client.scalar("SELECT id FROM campaigns", as: Int64.self))
            let due = try await stores.campaigns.loadCampaign(id)
            #expect(try await !stores.audience.snapshot(due, start: true, firstSlice: 100).complete)
            #expect(try await client.scalar("SELECT count(*) FROM snapshot_caps", as: Int64.self) == 1)
            try await client.exec("UPDATE campaigns SET status = 'paused'")
            #expect(try await client.scalar("SELECT count(*) FROM snapshot_caps", as: Int64.self) == 1)
            try await client.exec("UPDATE campaigns SET status = 'cancelled'")
            #expect(try await client.scalar("SELECT count(*) FROM snapshot_caps", as: Int64.self) == 0)
        }
    }

    @Test func aSnapshotStoppedBetweenSlicesGoesOnWhereItStopped() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 1000))
            try await client.exec(Fixtures.campaign(name: "Paused midway"))
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let id = try #require(try await client.scalar("SELECT id FROM campaigns", as: Int64.self))
            let due = try await stores.campaigns.loadCampaign(id)

            let first = try await stores.audience.snapshot(due, start: true, firstSlice: 100)
            #expect(first.inserted == 100)
            #expect(!first.complete)
            #expect(try await client.scalar("SELECT status || ' ' || snapshot_through FROM campaigns", as: String.self) == "running 100")
            // What is written so far is sent; the campaign is not complete
            // while slices remain.
            try await client.exec("UPDATE deliveries SET status = 'sent', sent_at = now()")
            #expect(try await !stores.campaigns.completeIfDone(id))
            // Its variants are frozen from the first slice on.
            do {
                try await client.exec("INSERT INTO campaign_variants (campaign_id, name, share) VALUES (\(id), 'A', 50), (\(id), 'B', 50)")
                Issue.record("a variant was added to a campaign whose audience is being written")
            } catch {
                #expect(String(reflecting: error).contains("variants cannot be added"), "\(String(reflecting: error))")
            }

            // A marketer's pause stops the snapshot where it is.
            try await client.exec("UPDATE campaigns SET status = 'paused'")
            let paused = try await stores.audience.snapshot(due, start: true, firstSlice: 100)
            #expect(paused.inserted == 0)
            #expect(try await client.scalar("SELECT snapshot_through FROM campaigns", as: Int64.self) == 100)

            // Resumed, it goes on from device 101, slice after slice.
            try await client.exec("UPDATE campaigns SET status = 'running'")
            var total = first
            var slices = 1
            while !total.complete {
                total.add(try await stores.audience.snapshot(due, start: true, firstSlice: 100))
                slices += 1
                try #require(slices < 10)
            }
            #expect(total.inserted == 1000)
            #expect(slices == 3)   // 100, 300, 1,200 device ids
            #expect(try await client.scalar("SELECT count(DISTINCT device_id) FROM delivery_status", as: Int64.self) == 1000)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status", as: Int64.self) == 1000)
            #expect(try await client.scalar("SELECT snapshot_through IS NULL FROM campaigns", as: Bool.self) == true)
            // A snapshot is written once.
            #expect(try await stores.audience.snapshot(due, start: true, firstSlice: 100).inserted == 0)
            try await client.exec("UPDATE deliveries SET status = 'sent', sent_at = now()")
            #expect(try await stores.campaigns.completeIfDone(id))
        }
    }
}
