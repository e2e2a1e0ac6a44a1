import Foundation
import HeraldCore
import PostgresNIO
import Store
import TestSupport
import Testing

/// The replies table without foreign keys (Sql/0013), stored through one
/// checked path (Sql/0018): `ReplyStore.store` looks each reply's delivery
/// up and checks its action in the INSERT itself; an INSERT written by
/// hand is checked by the statement trigger.
@Suite("Replies at scale (Sql/0013, Sql/0018, Sql/0031)")
struct RepliesAtScaleTests {
    /// The two ledgers a reply is looked up in: rows written by hand (the
    /// general path) and rows as runs write them (a partition and a range
    /// per campaign: the fast path).
    static let ledgers = [Fixtures.threeDeliveries, Fixtures.threeDeliveriesAsRunsWriteThem]

    static func reply(_ delivery: Int64, action: String = "love_it", text: String? = nil, replyID: UUID = UUID(),
                      textAllowed: Bool = true) -> ReplyStore.IncomingReply {
        ReplyStore.IncomingReply(replyID: replyID, deliveryID: delivery, action: action, text: text,
                                 occurredAt: Date(timeIntervalSince1970: 1_800_000_000), textProblem: textAllowed ? nil : .textInvalid)
    }

    /// Replies the fixture's deliveries accept: delivery 2 is the feedback
    /// prompt's (a text input), 1 and 3 the poster's.
    static func good(_ ids: [Int64]) -> [ReplyStore.IncomingReply] {
        ids.map { $0 == 2 ? reply($0, action: "comment", text: "answer \($0)") : reply($0) }
    }

    /// A batch with a reply of each kind the fixture's deliveries refuse,
    /// and three they accept; `mixedRefusals` says why each is refused.
    static let mixed = [
        reply(3),                                        // 0 stored
        reply(999),                                      // 1 no such delivery
        reply(2, action: "love_it"),                     // 2 not an action of the feedback prompt
        reply(1, action: "love_it", text: "no"),         // 3 text where none is allowed
        reply(2, action: "comment", text: "fine"),       // 4 stored
        reply(2, action: "comment", textAllowed: false), // 5 refused whatever its delivery
        reply(1, action: "com.apple.UNNotificationDismissActionIdentifier"), // 6 stored
        reply(1, action: "com.apple.UNNotificationDefaultActionIdentifier", text: "no"), // 7 text on the default action
    ]
    static let mixedRefusals: [ReplyStore.Refusal] = [
        .init(position: 1, reason: .unknownDelivery),
        .init(position: 2, reason: .actionNotAllowed, category: "feedback.v1"),
        .init(position: 3, reason: .textNotAllowed, category: "poster.v1"),
        .init(position: 5, reason: .textRefused, category: "feedback.v1", textProblem: .textInvalid),
        .init(position: 7, reason: .textNotAllowed, category: "poster.v1"),
    ]

    @Test func repliesHaveNoForeignKeysLeft() async throws {
        try await TestDatabase.with { client, _ in
            let keys = try await client.scalar(
                "SELECT count(*) FROM pg_constraint WHERE conrelid = 'replies'::regclass AND contype = 'f'", as: Int64.self)
            #expect(keys == 0)
        }
    }

    /// What the foreign keys did for a statement written by hand, the
    /// statement trigger does: a reply to a delivery that does not exist, or
    /// that is not its campaign's, fails the whole statement.
    @Test func anInsertByHandOfAReplyToAnUnknownDeliveryIsRefusedWhole() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveries)
            let poster = try #require(try await client.scalar("SELECT campaign_id FROM delivery_status WHERE id = 1", as: Int64.self))
            for wrong in ["999", "2"] {
                do {
                    try await client.exec("""
                        INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                        SELECT gen_random_uuid(), v.id, \(poster), d.device_id, d.user_id, 'love_it', now()
                        FROM (VALUES (1), (3), (\(wrong))) AS v(id) JOIN delivery_status d ON d.id = 1
                        """)
                    Issue.record("a statement with a reply to an unknown delivery was stored")
                } catch {
                    #expect(StoreError.sqlState(of: error) == "23503")
                    #expect(ErrorText.describe(error).contains("which campaign \(poster) does not have"))
                }
                #expect(try await client.scalar("SELECT count(*) FROM replies", as: Int64.self) == 0)
            }
        }
    }

    /// `store` refuses, by position, what does not answer a delivery as its
    /// campaign allows, and stores the rest, on either ledger.
    @Test(arguments: ledgers) func storeRefusesByPositionAndStoresTheRest(ledger: String) async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(ledger)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            let stored = try await store.store(Self.mixed, source: "api")
            #expect(stored == ReplyStore.StoredBatch(stored: 3, refusals: Self.mixedRefusals, duplicates: []))
            let rows = try await PartitionTests.lines(client, "SELECT delivery_id || ':' || action || ':' || coalesce(text, '-') FROM replies ORDER BY id")
            #expect(Set(rows) == ["3:love_it:-", "2:comment:fine", "1:com.apple.UNNotificationDismissActionIdentifier:-"])
            // The campaign, device and user come from the ledger.
            #expect(try await client.scalar("""
                SELECT count(*) FROM replies r JOIN delivery_status d ON d.id = r.delivery_id
                WHERE (r.campaign_id, r.device_id, r.user_id) = (d.campaign_id, d.device_id, d.user_id)
                """, as: Int64.self) == 3)
        }
    }

    /// A batch of at most 500 replies is stored by one INSERT over all its
    /// ranges, a larger one by one INSERT per range (Sql/0031): the same
    /// replies are stored and refused, with the same reasons, either way.
    @Test(arguments: [0, 600]) func bothFormsOfTheFastPathStoreAndRefuseAlike(padding: Int) async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveriesAsRunsWriteThem)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            let batch = Self.mixed + (0..<padding).map { Self.reply($0 % 2 == 0 ? 1 : 3) }
            #expect(try await store.store(batch, source: "ingest") == ReplyStore.StoredBatch(
                stored: 3 + padding, refusals: Self.mixedRefusals, duplicates: []))
            #expect(try await client.scalar("SELECT count(*) FROM replies", as: Int64.self) == Int64(3 + padding))
        }
    }

    /// A reply is its delivery and `reply_id`: the same again is a duplicate,
    /// the first of two in a batch is the one stored, and the same `reply_id`
    /// for another delivery is another reply.
    @Test(arguments: ledgers) func aReplyIsItsDeliveryAndReplyID(ledger: String) async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(ledger)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            let id = UUID()
            #expect(try await store.store([Self.reply(1, replyID: id)], source: "api").stored == 1)
            let batch = [
                Self.reply(2, action: "comment", text: "first", replyID: id),   // 0 stored: another delivery
                Self.reply(1, replyID: id),                                     // 1 duplicate: stored before
                Self.reply(2, action: "comment", text: "second", replyID: id),  // 2 duplicate of 0
                Self.reply(3, action: "nope", replyID: id),                     // 3 refused
                Self.reply(3, replyID: id),                                     // 4 stored: the first of 3 that passes
            ]
            #expect(try await store.store(batch, source: "ingest") == ReplyStore.StoredBatch(
                stored: 2, refusals: [.init(position: 3, reason: .actionNotAllowed, category: "poster.v1")], duplicates: [1, 2]))
            let rows = try await PartitionTests.lines(client, "SELECT delivery_id || ':' || coalesce(text, '-') FROM replies WHERE reply_id = '\(id)' ORDER BY delivery_id")
            #expect(rows == ["1:-", "2:first", "3:-"])
        }
    }

    @Test(arguments: ledgers) func aReplyToATestSendRecordsItsKind(ledger: String) async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(ledger + """
                ;
                INSERT INTO deliveries (id, kind, campaign_id, device_id, user_id, status, sent_at)
                SELECT 4, 'test', campaign_id, device_id, user_id, 'sent', now() FROM delivery_status WHERE id = 1;
                INSERT INTO deliveries (id, kind, campaign_id, device_id, user_id, status, sent_at)
                SELECT 5, 'test', campaign_id, device_id, user_id, 'sent', now() FROM delivery_status WHERE id = 3;
                INSERT INTO delivery_id_ranges (campaign_id, ids)
                SELECT campaign_id, int8range(id, id, '[]') FROM delivery_status WHERE id IN (4, 5)
                  AND EXISTS (SELECT 1 FROM delivery_id_ranges)
                """)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            #expect(try await store.store(Self.good([1, 4]), source: "api").stored == 2)
            #expect(try await store.store(Self.good([3, 5, 2]), source: "ingest").stored == 3)
            let kinds = try await PartitionTests.lines(client, "SELECT delivery_id || ':' || delivery_kind FROM replies ORDER BY delivery_id")
            #expect(kinds == ["1:campaign", "2:campaign", "3:campaign", "4:test", "5:test"])
        }
    }

    /// A batch is stored whole or not at all: a constraint of the table
    /// failing for one reply stores none of them, and says which constraint.
    @Test(arguments: ledgers) func aConstraintFailingStoresNothingOfTheBatch(ledger: String) async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(ledger + """
                ;
                ALTER TABLE replies ADD CONSTRAINT "reply text must not say bad" CHECK (text IS NULL OR text <> 'bad')
                """)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            do {
                _ = try await store.store(Self.good([1, 3]) + [Self.reply(2, action: "comment", text: "bad")], source: "api")
                Issue.record("a batch with a reply the table refuses was stored")
            } catch {
                #expect(StoreError.sqlState(of: error) == "23514")
                #expect(StoreError.constraint(of: error) == "reply text must not say bad")
            }
            #expect(try await client.scalar("SELECT count(*) FROM replies", as: Int64.self) == 0)
        }
    }

    @Test func deletingADeviceOrAUserDeletesTheirReplies() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveries)
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            #expect(try await store.store(Self.good([1, 2, 3]), source: "api").stored == 3)
            // A reply whose user is not its device's owner (a device that moved to
            // another user after the delivery) goes with either.
            try await client.exec("""
                INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                SELECT gen_random_uuid(), id, campaign_id, device_id, user_id, 'dont_care', now() FROM delivery_status WHERE id = 3;
                UPDATE devices SET user_id = (SELECT user_id FROM delivery_status WHERE id = 1)
                WHERE id = (SELECT device_id FROM delivery_status WHERE id = 3)
                """)
            let device1 = try #require(try await client.scalar("SELECT device_id FROM delivery_status WHERE id = 1", as: Int64.self))
            let user3 = try #require(try await client.scalar("SELECT user_id FROM delivery_status WHERE id = 3", as: Int64.self))
            try await client.exec("DELETE FROM devices WHERE id = \(device1)")
            #expect(try await PartitionTests.lines(client, "SELECT delivery_id::text FROM replies ORDER BY 1") == ["2", "3", "3"])
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE id = 1", as: Int64.self) == 0)
            try await client.exec("DELETE FROM users WHERE id = \(user3)")
            #expect(try await PartitionTests.lines(client, "SELECT delivery_id::text FROM replies ORDER BY 1") == ["2"])
            // The device of delivery 3 (now another user's) is still there.
            #expect(try await client.scalar("SELECT count(*) FROM devices", as: Int64.self) == 2)
        }
    }

    @Test(arguments: ledgers) func aDeviceDeletedWhileItsReplyIsBeingStoredTakesTheReplyWithIt(ledger: String) async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(ledger)
            let device1 = try #require(try await client.scalar("SELECT device_id FROM delivery_status WHERE id = 1", as: Int64.self))
            let store = ReplyStore(client: client, logger: TestDatabase.logger)
            try await client.withConnection { storing in
                // The reply's transaction is open (its row written, not committed)…
                try await storing.query("BEGIN", logger: TestDatabase.logger)
                try await storing.query("""
                    SELECT stored FROM herald_store_checked_replies(ARRAY[gen_random_uuid()], ARRAY[1::bigint], ARRAY['love_it'],
                        ARRAY[false], ARRAY[''], ARRAY[1800000000::float8], ARRAY[true], 'api')
                    """, logger: TestDatabase.logger)
                // …when the device is deleted on another connection: the deletion waits for it.
                async let deleted: Void = client.exec("DELETE FROM devices WHERE id = \(device1)")
                try await Task.sleep(for: .milliseconds(300))
                try await storing.query("COMMIT", logger: TestDatabase.logger)
                try await deleted
            }
            #expect(try await client.scalar("SELECT count(*) FROM replies", as: Int64.self) == 0)
            // A reply to the deleted device's delivery is refused now.
            #expect(try await store.store([Self.reply(1)], source: "api") == ReplyStore.StoredBatch(stored: 0, refusals: [.init(position: 0, reason: .unknownDelivery)]))
        }
    }
}
