import APNs
import APNsSimulator
import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Store
import TestSupport
import Testing

@Suite("Leases")
struct LeaseTests {
    static func setUp(_ client: Database) async throws -> (RunStores, Int64) {
        try await client.exec(Fixtures.catalogue)
        try await client.exec(Fixtures.audience(count: 20))
        try await client.exec(Fixtures.campaign(name: "Leased"))
        try await client.exec("""
            UPDATE campaigns SET status = 'running', snapshot_at = now();
            INSERT INTO deliveries (campaign_id, device_id, user_id) SELECT c.id, d.id, d.user_id FROM campaigns c, devices d;
            INSERT INTO runs (id, host, pid, heartbeat_at) VALUES (1, 'a', 1, now()), (2, 'b', 2, now());
            """)
        let id = try #require(try await client.scalar("SELECT id FROM campaigns", as: Int64.self))
        return (RunStores(client: client, logger: TestDatabase.logger), id)
    }

    @Test func aLiveLeaseIsNeverTakenAndAnExpiredOneIs() async throws {
        try await TestDatabase.with { client, _ in
            let (stores, campaign) = try await Self.setUp(client)
            let first = try await stores.ledger.claim(campaign: campaign, run: 1, limit: 10, lease: .seconds(60))
            #expect(first.count == 10)
            // Run 2 gets the other ten, never run 1's.
            let second = try await stores.ledger.claim(campaign: campaign, run: 2, limit: 20, lease: .seconds(60))
            #expect(second.count == 10)
            #expect(Set(first.map(\.target.deliveryID)).isDisjoint(with: second.map(\.target.deliveryID)))
            #expect(try await stores.ledger.claim(campaign: campaign, run: 2, limit: 20, lease: .seconds(60)).isEmpty)
            // Renewal keeps them; once run 1's leases expire, run 2 takes them over, same apns-id.
            #expect(try await stores.runs.renewLeases(run: 1, lease: .seconds(60)))
            try await client.exec("UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = 1")
            let takeover = try await stores.ledger.claim(campaign: campaign, run: 2, limit: 20, lease: .seconds(60))
            #expect(Set(takeover.map(\.target.deliveryID)) == Set(first.map(\.target.deliveryID)))
            #expect(Set(takeover.map(\.target.apnsID)) == Set(first.map(\.target.apnsID)))
            // Run 1, back, holds nothing after renewing, and cannot record over run 2.
            #expect(try await stores.runs.renewLeases(run: 1, lease: .seconds(60)))
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE claimed_by = 1 AND status = 'in_flight'", as: Int64.self) == 0)
            let late = first.map { DeliveryOutcome(deliveryID: $0.target.deliveryID, deviceID: $0.deviceID, status: .failed, error: "late") }
            #expect(try await stores.ledger.record(late, run: 1, campaign: campaign) == 0)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'failed'", as: Int64.self) == 0)
            let mine = takeover.map { DeliveryOutcome(deliveryID: $0.target.deliveryID, deviceID: $0.deviceID, status: .sent) }
            #expect(try await stores.ledger.record(mine, run: 2, campaign: campaign) == 10)
        }
    }

    @Test func finishingARunGivesBackWhatItHolds() async throws {
        try await TestDatabase.with { client, _ in
            let (stores, campaign) = try await Self.setUp(client)
            _ = try await stores.ledger.claim(campaign: campaign, run: 1, limit: 5, lease: .seconds(60))
            let back = try await stores.runs.finishRun(1, figures: RunFigures(), end: .stopped, error: "stopped")
            #expect(back == 5)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'in_flight'", as: Int64.self) == 0)
            #expect(try await client.scalar("SELECT status || ' ' || requeued FROM runs WHERE id = 1", as: String.self) == "stopped 5")
        }
    }

    /// A run's in-flight rows are found through the campaigns its claims
    /// recorded (no index names `claimed_by`, Sql/0012): what it holds in
    /// several campaigns' partitions, and config refresh pushes, all go back.
    @Test func whatARunHoldsInSeveralPartitionsGoesBack() async throws {
        try await TestDatabase.with { client, _ in
            let (stores, first) = try await Self.setUp(client)
            try await client.exec(Fixtures.campaign(name: "Second"))
            try await client.exec("""
                UPDATE campaigns SET status = 'running', snapshot_at = now() WHERE name = 'Second';
                SELECT herald_delivery_partition(id) FROM campaigns WHERE name = 'Second';
                INSERT INTO deliveries (campaign_id, device_id, user_id)
                SELECT c.id, d.id, d.user_id FROM campaigns c, devices d WHERE c.name = 'Second';
                INSERT INTO config_documents (etag, locale, categories) VALUES ('"e1"', 'en', '{}');
                INSERT INTO deliveries (kind, config_etag, device_id, user_id, refresh_open)
                SELECT 'config_refresh', '"e1"', id, user_id, true FROM devices WHERE id <= 3;
                """)
            let second = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Second'", as: Int64.self))
            #expect(try await client.scalar("SELECT count(*) FROM deliveries_c\(second)", as: Int64.self) == 20)
            _ = try await stores.ledger.claim(campaign: first, run: 1, limit: 4, lease: .seconds(60))
            _ = try await stores.ledger.claim(campaign: second, run: 1, limit: 6, lease: .seconds(60))
            _ = try await ConfigRefreshStore(client: client, logger: TestDatabase.logger).claim(run: 1, limit: 10, lease: .seconds(60))
            _ = try await stores.ledger.claim(campaign: second, run: 2, limit: 2, lease: .seconds(60))
            #expect(try await client.scalar("SELECT claimed_campaigns::text || ' ' || claimed_refreshes FROM runs WHERE id = 1",
                                            as: String.self) == "{\(first),\(second)} true")
            let back = try await stores.runs.finishRun(1, figures: RunFigures(), end: .stopped, error: nil)
            #expect(back == 4 + 6 + 3)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE claimed_by = 1", as: Int64.self) == 0)
            // Run 2's claim is its own.
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'in_flight'", as: Int64.self) == 2)
            // Run 2 dies: the next run recovers its rows from its campaign's partition.
            try await client.exec("INSERT INTO runs (id, host, pid) VALUES (3, 'c', 3)")
            #expect(try await stores.runs.recoverAbandoned(currentRun: 3, deadRuns: [2], lease: .seconds(60)) == 2)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'in_flight'", as: Int64.self) == 0)
        }
    }

    @Test func runsThatStoppedRenewingAreRecovered() async throws {
        try await TestDatabase.with { client, _ in
            let (stores, campaign) = try await Self.setUp(client)
            _ = try await stores.ledger.claim(campaign: campaign, run: 1, limit: 5, lease: .seconds(60))
            _ = try await stores.ledger.claim(campaign: campaign, run: 2, limit: 5, lease: .seconds(60))
            // Run 1 went silent a while ago; run 2 is alive.
            try await client.exec("""
                UPDATE runs SET heartbeat_at = now() - interval '5 minutes' WHERE id = 1;
                UPDATE runs SET lease_expires_at = now() - interval '4 minutes' WHERE id = 1;
                INSERT INTO runs (id, host, pid) VALUES (3, 'c', 3);
                """)
            let recovered = try await stores.runs.recoverAbandoned(currentRun: 3, deadRuns: [], lease: .seconds(60))
            #expect(recovered == 5)
            #expect(try await client.scalar("SELECT string_agg(status, ',' ORDER BY id) FROM runs", as: String.self) == "failed,running,running")
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'in_flight' AND claimed_by = 2", as: Int64.self) == 5)
        }
    }
}
