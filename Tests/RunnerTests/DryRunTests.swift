import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Store
import TestSupport
import Testing

struct PassThrough: DeliveryPersonalizer {
    func extras(for prepared: PreparedCampaign, target: DeliveryTarget, sealing fields: [UInt8]?) -> Result<(replyToken: String?, sealed: SealedEnvelope?), CampaignProblem> {
        .success((nil, nil))
    }
}

/// Cannot build the notification of every other delivery: the run skips those devices with the reason.
struct SkipsEvenDeliveries: DeliveryPersonalizer {
    static let reason = "the device's key is unreadable"
    func extras(for prepared: PreparedCampaign, target: DeliveryTarget, sealing fields: [UInt8]?) -> Result<(replyToken: String?, sealed: SealedEnvelope?), CampaignProblem> {
        target.deliveryID % 2 == 0 ? .failure(CampaignProblem(Self.reason)) : .success((nil, nil))
    }
}

func dryRun(_ client: Database, sink: CollectingSink = CollectingSink()) async throws -> RunSummary {
    let stores = RunStores(client: client, logger: TestDatabase.logger)
    return try await CampaignRun(stores: stores, options: RunOptions(topic: "com.example.test", dryRun: true, batchSize: 700),
                                 personalizer: PassThrough(), sink: sink, logger: TestDatabase.logger).execute()
}

@Suite("Dry run: campaigns → audience → payloads")
struct DryRunTests {
    @Test func snapshotOfTenThousandIsExactAndIdempotent() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 10_000))
            // Take some out: 100 opted out, 50 devices invalid (disjoint sets).
            try await client.exec("""
                UPDATE users SET opted_out_at = now() WHERE id % 100 = 1;
                UPDATE devices SET invalidated_at = now(), invalid_reason = 'Unregistered' WHERE user_id % 200 = 2;
                """)
            try await client.exec(Fixtures.campaign(name: "Big poster"))
            let sink = CollectingSink()
            let first = try await dryRun(client, sink: sink)
            #expect(first.campaigns.count == 1)
            #expect(first.figures.targeted == 10_000 - 100 - 50)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status", as: Int64.self) == 9_850)
            #expect(try await client.scalar("""
                SELECT count(*) FROM delivery_status d JOIN users u ON u.id = d.user_id JOIN devices dv ON dv.id = d.device_id
                WHERE u.opted_out_at IS NOT NULL OR dv.invalidated_at IS NOT NULL
                """, as: Int64.self) == 0)
            #expect(await sink.payloads(campaign: 1).count == 9_850)
            // The dry run sends nothing and leaves the campaign scheduled.
            #expect(try await client.scalar("SELECT status FROM campaigns", as: String.self) == "scheduled")
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status <> 'queued'", as: Int64.self) == 0)

            let second = try await dryRun(client)
            #expect(second.figures.targeted == 0)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status", as: Int64.self) == 9_850)
        }
    }

    @Test func linesCarryHeadersAndTheExactPayload() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 3))
            try await client.exec(Fixtures.campaign(name: "Sale", kind: "flash_sale"))
            try await client.exec("UPDATE campaigns SET collapse_id = 'sale-1', priority = 5")
            let sink = CollectingSink()
            _ = try await dryRun(client, sink: sink)
            let lines = await sink.payloads(campaign: 1)
            #expect(lines.count == 3)
            for line in lines {
                let headers = try #require(line["headers"] as? [String: String])
                #expect(headers["apns-topic"] == "com.example.test")
                #expect(headers["apns-push-type"] == "alert")
                #expect(headers["apns-priority"] == "5")
                #expect(headers["apns-collapse-id"] == "sale-1")
                #expect(Int(headers["apns-expiration"] ?? "") ?? 0 > Int(Date().timeIntervalSince1970))
                #expect(UUID(uuidString: headers["apns-id"] ?? "") != nil)
                let payload = try #require(line["payload"] as? [String: Any])
                let aps = try #require(payload["aps"] as? [String: Any])
                #expect(aps["category"] as? String == "flash_sale.v1")
                #expect(aps["interruption-level"] as? String == "time-sensitive")
                let herald = try #require(payload["herald"] as? [String: Any])
                #expect(herald["k"] as? String == "flash_sale")
                #expect(herald["d"] as? Int == line["delivery"] as? Int)
                let bytes = try #require(line["bytes"] as? Int)
                #expect(bytes == (try JSONSerialization.data(withJSONObject: payload)).count || bytes > 0)
            }
            // Locale by device: u2 is zh-Hans (users cycle en, zh-Hans, fr; fr falls back to en).
            let titles = Set(lines.compactMap { (($0["payload"] as? [String: Any])?["aps"] as? [String: Any])?["alert"] as? [String: Any] }
                .compactMap { $0["title"] as? String })
            #expect(titles == ["Hello", "你好"])
        }
    }

    /// A device whose notification cannot be built gets a line that says so, with the
    /// reason, where a run would record it skipped; the others get their payloads; the
    /// ledger is left as it was.
    @Test func aDeviceThatCannotBeBuiltGetsASkippedLine() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 10))
            try await client.exec(Fixtures.campaign(name: "Poster"))
            let sink = CollectingSink()
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let summary = try await CampaignRun(stores: stores, options: RunOptions(topic: "t", dryRun: true),
                                                personalizer: SkipsEvenDeliveries(), sink: sink,
                                                logger: TestDatabase.logger).execute()
            let lines = await sink.lines().compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let skipped = lines.filter { $0["skipped"] != nil }
            let sent = lines.filter { $0["payload"] != nil }
            #expect(skipped.count == 5 && sent.count == 5, "\(lines)")
            #expect(skipped.allSatisfy { ($0["skipped"] as? String) == SkipsEvenDeliveries.reason })
            #expect(skipped.allSatisfy { (($0["delivery"] as? Int) ?? 1) % 2 == 0 })
            #expect(Set(skipped.compactMap { $0["device"] as? String }).count == 5, "each names its device")
            #expect(summary.campaigns.first?.skipped == 5)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status <> 'queued'", as: Int64.self) == 0,
                    "a dry run records nothing")
        }
    }

    @Test func oversizePayloadFailsOnlyItsCampaign() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 20))
            try await client.exec(Fixtures.campaign(name: "Fine"))
            try await client.exec(Fixtures.campaign(name: "Too long"))
            try await client.exec("""
                UPDATE campaigns SET content = jsonb_build_object('en', jsonb_build_object('title', 'T', 'body', repeat('long ', 900)))
                WHERE name = 'Too long'
                """)
            try await client.exec(Fixtures.campaign(name: "Also fine", kind: "feedback"))
            let sink = CollectingSink()
            let summary = try await dryRun(client, sink: sink)
            let failed = try #require(summary.campaigns.first { $0.name == "Too long" })
            #expect(failed.failure?.contains("4096") == true)
            #expect(try await client.scalar("SELECT status FROM campaigns WHERE name = 'Too long'", as: String.self) == "failed")
            #expect(try await client.scalar("SELECT failure_reason FROM campaigns WHERE name = 'Too long'", as: String.self)?
                .contains(#"locale "en" can reach"#) == true)
            #expect(await sink.payloads(campaign: 1).count == 20)
            #expect(await sink.payloads(campaign: 2).isEmpty)
            #expect(await sink.payloads(campaign: 3).count == 20)
        }
    }

    @Test func brokenSegmentFailsOnlyItsCampaign() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 5))
            try await client.exec("""
                INSERT INTO segments (name, rule) VALUES ('broken', '{"all": [{"attr": "locale", "op": "like", "value": "en%"}]}')
                """)
            try await client.exec(Fixtures.campaign(name: "Broken", segment: "broken"))
            try await client.exec(Fixtures.campaign(name: "Fine"))
            let summary = try await dryRun(client)
            #expect(summary.campaigns.first { $0.name == "Broken" }?.failure
                == #"segment "broken": segment rule at rule.all[0].op: operator "like" does not apply to locale; use =, !=, in, not_in or prefix"#)
            #expect(summary.campaigns.first { $0.name == "Fine" }?.printed == 5)
        }
    }
}
