import APNs
import APNsSimulator
import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Store
import TestSupport
import Testing

/// `herald send-test` against the APNs simulator, as the command wires it.
func testSend(_ client: Database, apns: APNsConfiguration, secret: ReplySecret = .generate(),
              campaign: Int64, to recipient: TestSendRecipient) async throws -> [TestSendAnswer] {
    let apnsClient = try APNsClient(configuration: apns, logger: TestDatabase.logger)
    let test = TestSend(stores: RunStores(client: client, logger: TestDatabase.logger), topic: apns.topic,
                        personalizer: ReplyLoopPersonalizer(tokens: ReplyTokens(secret: secret)), transport: apnsClient)
    return try await withThrowingTaskGroup(of: [TestSendAnswer]?.self) { group in
        group.addTask {
            try await apnsClient.run()
            return nil
        }
        defer { group.cancelAll() }
        return try await test.send(campaign: campaign, to: recipient)
    }
}

/// The ledger's row counts and the campaign's state: what "writes nothing" compares.
private func footprint(_ client: Database) async throws -> [String] {
    var out: [String] = []
    for table in ["deliveries", "campaigns", "runs", "replies", "devices"] {
        out.append("\(table)=\(try await client.scalar("SELECT count(*) FROM \(table)", as: Int64.self) ?? -1)")
    }
    out.append(try await client.scalar(
        "SELECT string_agg(id || ':' || status || ':' || coalesce(snapshot_at::text, '-') || ':' || coalesce(failure_reason, '-'), ',' ORDER BY id) FROM campaigns",
        as: String.self) ?? "")
    return out
}

/// The payload without the fields that exist per delivery (`d`, `r`, `sealed`).
private func campaignPart(_ payload: [UInt8]) throws -> NSDictionary {
    var object = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    var herald = try #require(object["herald"] as? [String: Any])
    for key in ["d", "r", "sealed"] { herald[key] = nil }
    object["herald"] = herald
    return object as NSDictionary
}

@Suite("Trying a campaign safely: preview and test sends", .serialized)
struct MarketerTests {
    static let sealedCampaign = """
        UPDATE campaigns SET sensitive = '{"code": "GOLD-42"}', frequency_capped = true;
        """

    @Test func previewWritesNothingAndCountsWhatTheRunThenSnapshots() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 30))
            try await client.exec(Fixtures.campaign(name: "Sale"))
            try await client.exec(Self.sealedCampaign)
            // Users 1 and 2 reached their frequency cap with two campaigns sent this week.
            try await client.exec("""
                UPDATE settings SET frequency_cap = 2;
                INSERT INTO campaigns (name, kind, status, content, category_id, quiet_hours, frequency_capped)
                SELECT 'Old ' || n, 'feedback', 'completed', '{"en": {"title": "t", "body": "b"}}', 'feedback.v1', false, false
                FROM generate_series(1, 2) AS n;
                INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
                SELECT c.id, dv.id, dv.user_id, 'sent', now() - interval '1 hour'
                FROM campaigns c, devices dv JOIN users u ON u.id = dv.user_id
                WHERE c.name LIKE 'Old %' AND u.external_id IN ('u3', 'u4');
                """)
            let id = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Sale'", as: Int64.self))
            // A draft, due tomorrow: previewed all the same.
            try await client.exec("UPDATE campaigns SET status = 'draft', send_at = now() + interval '1 day' WHERE id = \(id)")
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let before = try await footprint(client)
            let preview = try await CampaignPreview.make(stores: stores, campaign: id, topic: "com.example.herald")
            #expect(try await footprint(client) == before)
            #expect(preview.canGoOut, "\(preview.problems)")
            let audience = try #require(preview.audience)
            // 30 devices; every 3rd has a key (10), of which u3's is capped; u4 has no key anyway.
            #expect(audience.inserted == 30)
            #expect(audience.queued == 9)
            #expect(audience.skippedNoKey == 20)
            #expect(audience.skippedCapped == 1)
            #expect(audience.skipped == 21)
            #expect(Set(preview.locales.map(\.locale)) == ["en", "zh-Hans"])
            for l in preview.locales {
                #expect(l.payload.count > 0 && l.payload.count <= l.largestBytes && l.largestBytes <= PayloadBuilder.maxBytes)
                #expect(l.headers.contains { $0.name == "apns-topic" && $0.value == "com.example.herald" })
                let herald = try #require(try JSONSerialization.jsonObject(with: Data(l.payload)) as? [String: Any])["herald"] as? [String: Any]
                #expect(herald?["sealed"] != nil && herald?["r"] != nil)
            }
            #expect(preview.text.contains("9 would be queued"))
            let json = try #require(try JSONSerialization.jsonObject(with: Data(preview.json)) as? [String: Any])
            #expect((json["audience"] as? [String: Any])?["skipped_frequency_cap"] as? Int == 1)
            #expect(json["can_go_out"] as? Bool == true)
            #expect(json["pace"] is NSNull)

            // With a pace, the preview says how long its audience takes.
            try await client.exec("UPDATE campaigns SET rate_per_minute = 4 WHERE id = \(id)")
            let paced = try await CampaignPreview.make(stores: stores, campaign: id, topic: "com.example.herald")
            #expect(paced.text.contains("pace: at most 4 a minute: 9 notifications take about 2 min at 4 a minute, spread evenly"), "\(paced.text)")
            let pace = try #require(try JSONSerialization.jsonObject(with: Data(paced.json)) as? [String: Any])["pace"] as? [String: Any]
            #expect(pace?["notifications_per_minute"] as? Int == 4 && pace?["seconds"] as? Int == 120)
            try await client.exec("UPDATE campaigns SET rate_per_minute = NULL WHERE id = \(id)")

            // The real run snapshots exactly what the preview counted, and
            // sends what it showed (the per-delivery fields apart).
            try await client.exec("UPDATE campaigns SET status = 'scheduled', send_at = now() WHERE id = \(id)")
            try await withSimulator { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                let run = try #require(summary.campaigns.first { $0.id == id })
                #expect(run.snapshot == audience)
                #expect(run.sent == 9)
                let accepted = await sim.simulator.accepted
                let en = try #require(preview.locales.first { $0.locale == "en" })
                var enTokens = Set<String>()
                for try await t in try await client.query(
                    "SELECT dv.token FROM devices dv JOIN users u ON u.id = dv.user_id WHERE coalesce(dv.locale, u.locale) = 'en'",
                    logger: TestDatabase.logger).decode(String.self) { enTokens.insert(t) }
                let sentToEn = accepted.filter { enTokens.contains($0.deviceToken) }
                #expect(!sentToEn.isEmpty)
                for n in sentToEn { #expect(try campaignPart(n.payload) == campaignPart(en.payload)) }
            }
        }
    }

    @Test func previewOfABrokenCampaignListsTheProblemAndChangesNothing() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 6))
            try await client.exec(Fixtures.campaign(name: "Huge"))
            try await client.exec("UPDATE campaigns SET custom = jsonb_build_object('blob', repeat('x', 5000))")
            let id = try #require(try await client.scalar("SELECT id FROM campaigns", as: Int64.self))
            let before = try await footprint(client)
            let preview = try await CampaignPreview.make(stores: RunStores(client: client, logger: TestDatabase.logger),
                                                         campaign: id, topic: "com.example.herald")
            #expect(try await footprint(client) == before)
            #expect(!preview.canGoOut)
            #expect(preview.problems.contains { $0.contains("APNs accepts at most 4096") })
            #expect(preview.text.contains("PROBLEMS"))
            #expect(preview.locales.allSatisfy { $0.largestBytes > PayloadBuilder.maxBytes })
        }
    }

    @Test func aTestSendReachesOnlyTheNamedDeviceAndLeavesTheCampaignAlone() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 6))
            try await client.exec(Fixtures.campaign(name: "Sale"))
            try await client.exec(Self.sealedCampaign)
            let id = try #require(try await client.scalar("SELECT id FROM campaigns", as: Int64.self))
            let token = try #require(try await client.scalar(
                "SELECT token FROM devices WHERE public_key IS NOT NULL ORDER BY id LIMIT 1", as: String.self))
            let funnel = "SELECT targeted || '/' || sent || '/' || skipped || '/' || replies || '/' || status FROM analyst.campaign_funnel WHERE campaign_id = \(id)"
            let funnelBefore = try await client.scalar(funnel, as: String.self)
            #expect(funnelBefore == "0/0/0/0/scheduled")
            try await withSimulator { sim in
                let answers = try await testSend(client, apns: sim.clientConfiguration, campaign: id, to: .device(token: token))
                #expect(answers.count == 1)
                #expect(answers.first?.status == "sent")
                #expect(answers.first?.httpStatus == 200)
                let accepted = await sim.simulator.accepted
                #expect(accepted.map(\.deviceToken) == [token])
                #expect(accepted.first?.headers["apns-id"]?.lowercased() == answers.first?.apnsID.uuidString.lowercased())
                let first = try #require(accepted.first)
                let payload = try #require(try JSONSerialization.jsonObject(with: Data(first.payload)) as? [String: Any])
                #expect((payload["herald"] as? [String: Any])?["sealed"] != nil)
                // In the ledger as a test; the campaign's figures and status unchanged.
                #expect(try await client.scalar(
                    "SELECT kind || ':' || status FROM delivery_status WHERE campaign_id = \(id)", as: String.self) == "test:sent")
                // The marketer opens it: the reply is stored, and left out of the analyst views.
                try await client.exec("""
                    INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                    SELECT gen_random_uuid(), id, campaign_id, device_id, user_id,
                           'com.apple.UNNotificationDefaultActionIdentifier', now()
                    FROM delivery_status WHERE kind = 'test'
                    """)
                #expect(try await client.scalar(funnel, as: String.self) == funnelBefore)
                #expect(try await client.scalar("SELECT count(*) FROM analyst.action_breakdown", as: Int64.self) == 0)
                #expect(try await client.scalar("SELECT count(*) FROM analyst.replies_over_time", as: Int64.self) == 0)
                #expect(try await client.scalar("SELECT count(*) FROM analyst.test_sends", as: Int64.self) == 1)
                #expect(try await client.scalar("SELECT status FROM campaigns", as: String.self) == "scheduled")

                // By user: every device of that user; an unknown device is refused by name.
                let user = try #require(try await client.scalar(
                    "SELECT u.external_id FROM users u JOIN devices dv ON dv.user_id = u.id WHERE dv.token = '\(token)'", as: String.self))
                let again = try await testSend(client, apns: sim.clientConfiguration, campaign: id, to: .user(externalID: user))
                #expect(again.map(\.deviceToken) == [token])
                await #expect(throws: CampaignProblem.self) {
                    _ = try await testSend(client, apns: sim.clientConfiguration, campaign: id,
                                           to: .device(token: String(repeating: "f", count: 64)))
                }

                // The real run still delivers to that device, once, and counts only its own.
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.figures.sent == 2)   // the two keyed devices of six
                let toDevice = await sim.simulator.accepted.filter { $0.deviceToken == token }
                #expect(toDevice.count == 3)
                #expect(try await client.scalar(funnel, as: String.self) == "6/2/4/0/completed")
                #expect(try await client.scalar(
                    "SELECT count(*) FROM delivery_status WHERE kind = 'campaign' AND status = 'sent' AND device_id = (SELECT id FROM devices WHERE token = '\(token)')",
                    as: Int64.self) == 1)
            }
        }
    }
}
