import Foundation
import HeraldCore
import PostgresNIO
import Store
import Testing
import TestSupport

/// The replies table without foreign keys (Sql/0013): what the keys did is
/// done by the statements and by triggers once per statement.
@Suite("Replies at scale (Sql/0013)")
struct RepliesAtScaleTests {
    static func reply(_ delivery: Int64, campaign: Int64, device: Int64, user: Int64,
                      action: String = "love_it", text: String? = nil) -> AcceptedReply {
        AcceptedReply(replyID: UUID(), target: ReplyTarget(deliveryID: delivery, campaignID: campaign, deviceID: device,
                                                           userID: user, categoryID: nil),
                      action: action, text: text, occurredAt: Date(timeIntervalSince1970: 1_800_000_000))
    }

    /// The replies of deliveries `ids`, made as the intake makes them (from the ledger's rows).
    static func replies(_ client: PostgresClient, _ ids: [Int64]) async throws -> [AcceptedReply] {
        let store = ReplyStore(client: client, logger: TestDatabase.logger)
        let targets = try await store.targets(ids)
        return ids.compactMap { id in
            targets[id].map { t in
                AcceptedReply(replyID: UUID(), target: t, action: t.categoryID == "feedback.v1" ? "comment" : "love_it",
                              text: t.categoryID == "feedback.v1" ? "answer \(id)" : nil, occurredAt: Date())
            }
        }
    }

    @Test func repliesHaveNoForeignKeysLeft() async throws {
        try await TestDatabase.with { client, _ in
            let keys = try await client.scalar(
                "SELECT count(*) FROM pg_constraint WHERE conrelid = 'replies'::regclass AND contype = 'f'", as: Int64.self)
            #expect(keys == 0)
        }
    }

    @Test func aBatchWithOneReplyToAnUnknownDeliveryIsRefusedWhole() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveries)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            let batch = try await Self.replies(client, [1, 2, 3])
            let poster = batch[0].target
            // Delivery 999 does not exist; delivery 2 is not the poster's.
            for wrong in [Self.reply(999, campaign: poster.campaignID, device: poster.deviceID, user: poster.userID),
                          Self.reply(2, campaign: poster.campaignID, device: poster.deviceID, user: poster.userID)] {
                let attempt = batch + [wrong]
                do {
                    _ = try await store.insert(attempt, source: "api")
                    Issue.record("a batch with a reply to an unknown delivery was stored")
                } catch {
                    #expect(StoreError.sqlState(of: error) == "23503")
                    #expect(StoreError.describe(error).contains("which campaign \(poster.campaignID) does not have"))
                }
                do {
                    _ = try await store.copyIn(attempt, source: "ingest")
                    Issue.record("a batch with a reply to an unknown delivery was copied in")
                } catch {
                    #expect(StoreError.sqlState(of: error) == "23503")
                }
                #expect(try await client.scalar("SELECT count(*) FROM replies", as: Int64.self) == 0)
            }
            #expect(try await store.insert(batch, source: "api").count == 3)
        }
    }

    @Test func aReplyToATestSendRecordsItsKind() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveries + """
                ;
                INSERT INTO deliveries (id, kind, campaign_id, device_id, user_id, status, sent_at)
                SELECT 4, 'test', campaign_id, device_id, user_id, 'sent', now() FROM deliveries WHERE id = 1;
                INSERT INTO deliveries (id, kind, campaign_id, device_id, user_id, status, sent_at)
                SELECT 5, 'test', campaign_id, device_id, user_id, 'sent', now() FROM deliveries WHERE id = 3
                """)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            #expect(try await store.insert(try await Self.replies(client, [1, 4]), source: "api").count == 2)
            #expect(try await store.copyIn(try await Self.replies(client, [3, 5, 2]), source: "ingest") == 3)
            let kinds = try await PartitionTests.lines(client, "SELECT delivery_id || ':' || delivery_kind FROM replies ORDER BY delivery_id")
            #expect(kinds == ["1:campaign", "2:campaign", "3:campaign", "4:test", "5:test"])
        }
    }

    @Test func copyInStoresTheFirstOfTwoRepliesWithOneID() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveries)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            let batch = try await Self.replies(client, [1, 3])
            var second = batch[1]
            second.replyID = batch[0].replyID
            #expect(try await store.copyIn([batch[0], second, batch[1]], source: "ingest") == 2)
            let stored = try await PartitionTests.lines(client, "SELECT reply_id || ':' || delivery_id FROM replies ORDER BY delivery_id")
            #expect(stored == ["\(batch[0].replyID.uuidString.lowercased()):1", "\(batch[1].replyID.uuidString.lowercased()):3"])
        }
    }

    @Test func deletingADeviceOrAUserDeletesTheirReplies() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveries)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            #expect(try await store.insert(try await Self.replies(client, [1, 2, 3]), source: "api").count == 3)
            // A reply whose user is not its device's owner (a device that moved to
            // another user after the delivery) goes with either.
            try await client.exec("""
                INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                SELECT gen_random_uuid(), id, campaign_id, device_id, user_id, 'dont_care', now() FROM deliveries WHERE id = 3;
                UPDATE devices SET user_id = (SELECT user_id FROM deliveries WHERE id = 1)
                WHERE id = (SELECT device_id FROM deliveries WHERE id = 3)
                """)
            let device1 = try #require(try await client.scalar("SELECT device_id FROM deliveries WHERE id = 1", as: Int64.self))
            let user3 = try #require(try await client.scalar("SELECT user_id FROM deliveries WHERE id = 3", as: Int64.self))
            try await client.exec("DELETE FROM devices WHERE id = \(device1)")
            #expect(try await PartitionTests.lines(client, "SELECT delivery_id::text FROM replies ORDER BY 1") == ["2", "3", "3"])
            #expect(try await client.scalar("SELECT count(*) FROM deliveries WHERE id = 1", as: Int64.self) == 0)
            try await client.exec("DELETE FROM users WHERE id = \(user3)")
            #expect(try await PartitionTests.lines(client, "SELECT delivery_id::text FROM replies ORDER BY 1") == ["2"])
            // The device of delivery 3 (now another user's) is still there.
            #expect(try await client.scalar("SELECT count(*) FROM devices", as: Int64.self) == 2)
        }
    }

    @Test func aDeviceDeletedWhileItsReplyIsBeingStoredTakesTheReplyWithIt() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveries)
            let device1 = try #require(try await client.scalar("SELECT device_id FROM deliveries WHERE id = 1", as: Int64.self))
            let reply = try #require(try await Self.replies(client, [1]).first)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            try await client.withConnection { storing in
                // The reply's transaction is open (its row written, not committed)…
                try await storing.query("BEGIN", logger: TestDatabase.logger)
                try await storing.query("""
                    INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                    VALUES (\(reply.replyID), 1, \(reply.target.campaignID), \(reply.target.deviceID), \(reply.target.userID), 'love_it', now())
                    """, logger: TestDatabase.logger)
                // …when the device is deleted on another connection: the deletion waits for it.
                async let deleted: Void = client.exec("DELETE FROM devices WHERE id = \(device1)")
                try await Task.sleep(for: .milliseconds(300))
                try await storing.query("COMMIT", logger: TestDatabase.logger)
                try await deleted
            }
            #expect(try await client.scalar("SELECT count(*) FROM replies", as: Int64.self) == 0)
            // A reply to the deleted device's delivery is refused now.
            do {
                _ = try await store.insert([reply], source: "api")
                Issue.record("a reply to a deleted device's delivery was stored")
            } catch {
                #expect(StoreError.sqlState(of: error) == "23503")
            }
        }
    }
}
