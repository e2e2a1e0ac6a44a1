import APNs
import Foundation
import HeraldCore
import PostgresNIO
@testable import Runner
import Store
import TestSupport
import Testing

/// The outcome writes of campaigns sending at once go out together
/// (`OutcomeWriter`), against a real PostgreSQL: each row in its campaign's
/// partition, fenced by the run's hold on it as a write of one campaign is.
@Suite("Overlapping campaigns: their outcome writes")
struct OutcomeWriterTests {
    @Test func batchesOfSeveralCampaignsHandedOverMeanwhileShareAStatementAndKeepTheirFencing() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 40))
            try await client.exec(Fixtures.campaign(name: "First"))
            try await client.exec(Fixtures.campaign(name: "Second"))
            try await client.exec("""
                UPDATE campaigns SET status = 'running', snapshot_at = now();
                SELECT herald_delivery_partition(id) FROM campaigns;
                INSERT INTO deliveries (campaign_id, device_id, user_id) SELECT c.id, d.id, d.user_id FROM campaigns c, devices d;
                INSERT INTO runs (id, host, pid, heartbeat_at) VALUES (1, 'a', 1, now()), (2, 'b', 2, now());
                """)
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            var campaigns: [Int64] = []
            for try await id in try await client.query("SELECT id FROM campaigns ORDER BY id", logger: TestDatabase.logger).decode(Int64.self) {
                campaigns.append(id)
            }
            // Run 1 holds 30 rows of each campaign; run 2 the other 10 of each.
            var held: [Int64: [ClaimedDelivery]] = [:]
            for campaign in campaigns {
                held[campaign] = try await stores.ledger.claim(campaign: campaign, run: 1, limit: 30, lease: .seconds(60))
                #expect(try await stores.ledger.claim(campaign: campaign, run: 2, limit: 40, lease: .seconds(60)).count == 10)
            }
            let writer = OutcomeWriter(ledger: stores.ledger, db: DatabaseRetry(logger: TestDatabase.logger), run: 1)
            // Ten batches of three outcomes a campaign, all handed over at once.
            let batches = campaigns.flatMap { campaign in
                stride(from: 0, to: 30, by: 3).map { i in
                    (campaign, held[campaign]![i..<(i + 3)].map {
                        DeliveryOutcome(deliveryID: $0.target.deliveryID, deviceID: $0.deviceID, status: .sent)
                    })
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (campaign, outcomes) in batches {
                    group.addTask { try await writer.record(outcomes, campaign: campaign) }
                }
                try await group.waitForAll()
            }
            let statements = await writer.statements
            #expect(statements <= batches.count / 2, "\(statements) statements for \(batches.count) batches")
            for campaign in campaigns {
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign) AND status = 'sent' AND claimed_by = 1",
                                                as: Int64.self) == 30)
            }
            // Run 1's outcome for a row run 2 holds is not written, and fails nothing.
            let others = try await client.scalar("SELECT min(id) FROM delivery_status WHERE claimed_by = 2 AND campaign_id = \(campaigns[1])", as: Int64.self)
            try await writer.record([DeliveryOutcome(deliveryID: try #require(others), deviceID: 0, status: .failed, error: "late")],
                                    campaign: campaigns[1])
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'in_flight' AND claimed_by = 2", as: Int64.self) == 20)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'failed'", as: Int64.self) == 0)
        }
    }
}
