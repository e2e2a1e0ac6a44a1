import APNs
import APNsSimulator
import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Store
import TestSupport
import Testing

/// A real run against the APNs simulator over TLS + HTTP/2.
func sendRun(_ client: Database, apns: APNsConfiguration, secret: ReplySecret = .generate(),
             batchSize: Int = 500, concurrency: Int = 100) async throws -> RunSummary {
    try await sendRun(client, apns: apns, secret: secret,
                      options: RunOptions(topic: apns.topic, batchSize: batchSize, concurrency: concurrency))
}

/// The same with any run options (the fault settings under test); `adjust` changes the run
/// before it starts (the kinds of push it knows).
func sendRun(_ client: Database, apns: APNsConfiguration, secret: ReplySecret = .generate(),
             options: RunOptions, adjust: (inout CampaignRun) -> Void = { _ in }) async throws -> RunSummary {
    let stores = RunStores(client: client, logger: TestDatabase.logger)
    let apnsClient = try APNsClient(configuration: apns, logger: TestDatabase.logger)
    let channels = APNsChannels(configuration: apns, apps: options.apps)
    var run = CampaignRun(stores: stores, options: options,
                          personalizer: ReplyLoopPersonalizer(tokens: ReplyTokens(secret: secret)),
                          transport: apnsClient, channels: channels, logger: TestDatabase.logger)
    adjust(&run)
    do {
        let summary = try await withThrowingTaskGroup(of: RunSummary?.self) { group in
            group.addTask {
                try await apnsClient.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await run.execute()
        }
        await channels.shutdown()
        return summary
    } catch {
        await channels.shutdown()
        throw error
    }
}

@Suite("Runs that send through APNs", .serialized)
struct SendTests {
    @Test func everyDeliveryArrivesExactlyOnceWithItsHeadersAndPayload() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 1500))
            try await client.exec(Fixtures.campaign(name: "Sale", kind: "flash_sale"))
            try await client.exec("UPDATE campaigns SET collapse_id = 'sale', priority = 5")
            try await withSimulator { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.figures.sent == 1500)
                #expect(summary.campaigns.first?.completed == true)
                let accepted = await sim.simulator.accepted
                #expect(accepted.count == 1500)
                #expect(Set(accepted.map(\.deviceToken)).count == 1500)
                // Each device got its own delivery, with contract 1's headers.
                var deliveries = Set<Int64>()
                for n in accepted {
                    #expect(n.headers["apns-topic"] == sim.topic)
                    #expect(n.headers["apns-push-type"] == "alert")
                    #expect(n.headers["apns-priority"] == "5")
                    #expect(n.headers["apns-collapse-id"] == "sale")
                    #expect(n.headers["apns-expiration"].flatMap(Int.init) ?? 0 > Int(Date().timeIntervalSince1970))
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(n.payload)) as? [String: Any])
                    let herald = try #require(object["herald"] as? [String: Any])
                    deliveries.insert(Int64(try #require(herald["d"] as? Int)))
                }
                #expect(deliveries.count == 1500)
                // The ledger agrees, with the apns-id that was sent.
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'sent' AND sent_at IS NOT NULL", as: Int64.self) == 1500)
                let ids = Set(accepted.map { $0.headers["apns-id"]?.lowercased() ?? "" })
                var ledger = Set<String>()
                for try await id in try await client.query("SELECT apns_id FROM delivery_status", logger: TestDatabase.logger).decode(UUID.self) {
                    ledger.insert(id.uuidString.lowercased())
                }
                #expect(ids == ledger)
                #expect(try await client.scalar("SELECT status FROM campaigns", as: String.self) == "completed")
                #expect(try await client.scalar("SELECT sent FROM runs", as: Int64.self) == 1500)
            }
        }
    }

    @Test func goneDevicesAreInvalidatedAndNotTargetedAgain() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 30))
            let gone = String(repeating: "0", count: 63) + "5"         // user 5's device
            let foreign = String(repeating: "0", count: 62) + "0a"     // user 10's device
            try await client.exec(Fixtures.campaign(name: "First"))
            try await withSimulator(customize: { c in
                c.unregisteredTokens[gone] = Date(timeIntervalSince1970: 1_790_000_000)
                c.tokensOfOtherTopics.insert(foreign)
            }) { sim in
                let first = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(first.figures.sent == 28)
                #expect(first.figures.invalid == 2)
                #expect(try await client.scalar(
                    "SELECT invalid_reason || ' ' || extract(epoch FROM invalidated_at)::bigint FROM devices WHERE token = '\(gone)'",
                    as: String.self) == "Unregistered 1790000000")
                #expect(try await client.scalar(
                    "SELECT invalid_reason FROM devices WHERE token = '\(foreign)'", as: String.self) == "DeviceTokenNotForTopic")

                try await client.exec(Fixtures.campaign(name: "Second"))
                let second = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(second.figures.targeted == 28)
                #expect(second.figures.sent == 28)
                #expect(second.figures.invalid == 0)
                #expect(await sim.simulator.accepted.filter { $0.deviceToken == gone }.isEmpty)
            }
        }
    }

    @Test func stormsAndGoAwaysStillDeliverEverythingOnce() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 1200))
            try await client.exec(Fixtures.campaign(name: "Stormy"))
            try await withSimulator(customize: { c in
                c.faults = .init(rate429: 0.1, rate500: 0.05, rate503: 0.1, seed: 42, goAwayAfterStreams: 250)
            }) { sim in
                var apns = sim.clientConfiguration
                apns.retry = RetryPolicy(maxAttempts: 12, baseDelay: .milliseconds(1), maxDelay: .milliseconds(20))
                let summary = try await sendRun(client, apns: apns)
                #expect(summary.figures.sent == 1200)
                #expect(summary.figures.failed == 0)
                #expect(summary.figures.retried > 0)
                let accepted = await sim.simulator.accepted
                #expect(accepted.count == 1200)
                #expect(Set(accepted.map(\.deviceToken)).count == 1200)
                #expect(await sim.simulator.stats.goAwaysSent > 0)
            }
        }
    }

    @Test func aWrongKeyFailsTheCampaignWithItsReasonAndLeavesEveryDeliveryQueued() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 2000))
            try await client.exec(Fixtures.campaign(name: "Never"))
            try await withSimulator { sim in
                var apns = sim.clientConfiguration
                apns.signingKey = APNsSigningKey(privateKey: .init())
                let summary = try await sendRun(client, apns: apns, batchSize: 200, concurrency: 50)
                #expect(summary.exitStatus == 1, "a person is needed")
                #expect(summary.refusedApps["default"]?.contains("403 InvalidProviderToken") == true, "\(summary.refusedApps)")
                #expect(await sim.simulator.accepted.isEmpty)
                let statuses = try await client.scalar("SELECT count(DISTINCT status) FROM delivery_status", as: Int64.self)
                #expect(statuses == 1)
                let queued = try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'queued'", as: Int64.self)
                // The first answers refused the credential; every delivery waits for a person.
                #expect(queued == 2000)
                let reason = try await client.scalar("SELECT status || ': ' || failure_reason FROM campaigns", as: String.self) ?? ""
                #expect(reason.hasPrefix("failed: app default (credential: the APNS_* settings): APNs refused it (403 InvalidProviderToken); 2000 deliveries wait"), "\(reason)")
                let run = try await client.scalar("SELECT status || ': ' || error FROM runs", as: String.self)
                #expect(run?.contains("InvalidProviderToken") == true, "\(run ?? "")")
            }
        }
    }

    @Test func overlappingRunsNeverSendADeliveryTwice() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 2000))
            try await client.exec(Fixtures.campaign(name: "Shared"))
            try await withSimulator { sim in
                async let a = sendRun(client, apns: sim.clientConfiguration, batchSize: 100, concurrency: 50)
                async let b = sendRun(client, apns: sim.clientConfiguration, batchSize: 100, concurrency: 50)
                let (ra, rb) = try await (a, b)
                #expect(ra.figures.sent + rb.figures.sent == 2000)
                let accepted = await sim.simulator.accepted
                #expect(accepted.count == 2000)
                #expect(Set(accepted.map(\.deviceToken)).count == 2000)
            }
        }
    }

    @Test func aCrashedRunsDeliveriesAreRequeuedAndSent() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 50))
            try await client.exec(Fixtures.campaign(name: "Interrupted"))
            // A run that died mid-batch an hour ago: its row says running (with the campaign its claims
            // recorded), its heartbeat and leases expired, 20 deliveries in flight.
            try await client.exec("""
                UPDATE campaigns SET status = 'running', started_at = now();
                INSERT INTO deliveries (campaign_id, device_id, user_id, status)
                SELECT c.id, d.id, d.user_id, 'queued' FROM campaigns c, devices d;
                INSERT INTO runs (id, host, pid, started_at, heartbeat_at, claimed_campaigns)
                SELECT 900, 'gone', 1, now() - interval '1 hour', now() - interval '1 hour', array_agg(id) FROM campaigns;
                UPDATE deliveries SET status = 'in_flight', claimed_by = 900, lease_expires_at = now() - interval '55 minutes'
                WHERE id IN (SELECT id FROM delivery_status ORDER BY id LIMIT 20);
                UPDATE deliveries SET status = 'sent', sent_at = now() WHERE id IN (SELECT id FROM delivery_status ORDER BY id DESC LIMIT 10);
                """)
            try await withSimulator { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.recovered == 20)
                #expect(summary.figures.sent == 40)
                #expect(await sim.simulator.accepted.count == 40)
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'sent'", as: Int64.self) == 50)
                #expect(try await client.scalar("SELECT status FROM runs WHERE id = 900", as: String.self) == "failed")
            }
        }
    }

    @Test func pausedAndExpiredCampaignsStop() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 10))
            try await client.exec(Fixtures.campaign(name: "Paused"))
            try await client.exec(Fixtures.campaign(name: "Over", kind: "flash_sale"))
            try await client.exec("""
                UPDATE campaigns SET status = 'running' WHERE name = 'Over';
                INSERT INTO deliveries (campaign_id, device_id, user_id) SELECT c.id, d.id, d.user_id FROM campaigns c, devices d WHERE c.name = 'Over';
                UPDATE campaigns SET send_at = now() - interval '2 hours', expires_at = now() - interval '1 minute' WHERE name = 'Over';
                UPDATE campaigns SET status = 'paused' WHERE name = 'Paused';
                """)
            try await withSimulator { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.figures.sent == 0)
                #expect(summary.figures.expired == 10)
                #expect(await sim.simulator.accepted.isEmpty)
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'expired'", as: Int64.self) == 10)
                #expect(try await client.scalar("SELECT status FROM campaigns WHERE name = 'Over'", as: String.self) == "completed")
                // Resumed, the paused campaign goes out.
                try await client.exec("UPDATE campaigns SET status = 'scheduled' WHERE name = 'Paused'")
                let resumed = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(resumed.figures.sent == 10)
            }
        }
    }
}
