import Crypto
import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Replies in and the notification config out.
public struct ReplyStore: Sendable {
    public let client: PostgresClient
    public let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The deliveries among `ids` that exist, with their campaign's category
    /// (what says why a reply was refused; `store` looks deliveries up itself).
    ///
    /// The ledger is partitioned by campaign (Sql/0010) and a lookup by id
    /// alone would probe every partition: `herald_reply_targets` (Sql/0015)
    /// finds each id's campaign in `delivery_id_ranges` and reads that one
    /// partition, with a plan made once per database session.
    public func targets(_ ids: [Int64]) async throws -> [Int64: ReplyTarget] {
        guard !ids.isEmpty else { return [:] }
        var out: [Int64: ReplyTarget] = [:]
        out.reserveCapacity(ids.count)
        // One row of arrays, not a row per delivery: decoding 5,000 rows one
        // by one was most of `herald ingest`'s time in PostgresNIO.
        let rows = try await client.query("""
            SELECT coalesce(array_agg(id), '{}'), coalesce(array_agg(campaign_id), '{}'), coalesce(array_agg(device_id), '{}'),
                   coalesce(array_agg(user_id), '{}'), coalesce(array_agg(coalesce(category_id, '')), '{}'),
                   coalesce(array_agg(category_id IS NOT NULL), '{}')
            FROM herald_reply_targets(\(ids)::bigint[])
            """, logger: logger)
        for try await (found, campaigns, devices, users, categories, categorized)
            in rows.decode(([Int64], [Int64], [Int64], [Int64], [String], [Bool]).self) {
            Self.add(found, campaigns, devices, users, categories, categorized, to: &out)
        }
        return out
    }

    /// Adds the deliveries `herald_reply_targets` found, returned as one array
    /// per column (a category that is NULL is `categorized` false).
    private static func add(
        _ found: [Int64], _ campaigns: [Int64], _ devices: [Int64], _ users: [Int64], _ categories: [String], _ categorized: [Bool],
        to targets: inout [Int64: ReplyTarget]
    ) {
        for index in found.indices {
            targets[found[index]] = ReplyTarget(deliveryID: found[index], campaignID: campaigns[index], deviceID: devices[index],
                                                userID: users[index], categoryID: categorized[index] ? categories[index] : nil)
        }
    }

    /// Every category's actions (a small table: read whole).
    public func categoryActions() async throws -> [String: [CategoryAction]] {
        let rows = try await client.query("""
            SELECT ca.category_id, a.id, a.kind = 'text_input'
            FROM category_actions ca JOIN actions a ON a.id = ca.action_id
            ORDER BY ca.category_id, ca.position
            """, logger: logger)
        var out: [String: [CategoryAction]] = [:]
        for try await (category, action, text) in rows.decode((String, String, Bool).self) {
            out[category, default: []].append(CategoryAction(id: action, takesText: text))
        }
        return out
    }

    /// One reply to store: checked for what needs no delivery (its token,
    /// its text's length and characters).
    public struct IncomingReply: Sendable {
        public var replyID: UUID
        public var deliveryID: Int64
        public var action: String
        public var text: String?
        public var occurredAt: Date
        /// False: its text may not be stored whatever its delivery (the
        /// reply is refused).
        public var textAllowed: Bool

        public init(replyID: UUID, deliveryID: Int64, action: String, text: String?, occurredAt: Date, textAllowed: Bool = true) {
            self.replyID = replyID
            self.deliveryID = deliveryID
            self.action = action
            self.text = text
            self.occurredAt = occurredAt
            self.textAllowed = textAllowed
        }
    }

    /// What `store` did with a batch, by position in the batch.
    public struct StoredBatch: Sendable, Hashable {
        /// Replies stored now.
        public var stored = 0
        /// The replies refused: no such delivery, an action its campaign's
        /// category does not have, text where the action takes none, or a
        /// text not allowed. Ascending.
        public var refused: [Int] = []
        /// The replies that passed but whose delivery and `reply_id` were
        /// stored before, or earlier in the batch. Ascending.
        public var duplicates: [Int] = []

        public init(stored: Int = 0, refused: [Int] = [], duplicates: [Int] = []) {
            self.stored = stored
            self.refused = refused
            self.duplicates = duplicates
        }
    }

    /// Looks a batch's deliveries up, checks each reply against its
    /// campaign's category, stores what passes and commits, with one
    /// statement: `herald_commit_replies` (Sql/0018), which commits before
    /// it answers, so that when this returns the replies are durable. A
    /// reply is identified by its delivery and `reply_id`: of two with the
    /// same, the first that passes is stored; one stored before is left
    /// alone. The batch goes sorted by delivery id, which lets PostgreSQL
    /// read each campaign's slice of it from that campaign's partition. A
    /// statement the server refuses (a constraint of the table) throws its
    /// own `PSQLError` and stores nothing, so the caller can tell a refusal
    /// from a transient fault. Not to be called inside a transaction.
    public func store(_ replies: [IncomingReply], source: String) async throws -> StoredBatch {
        guard !replies.isEmpty else { return StoredBatch() }
        // Sorted by delivery, and by position within one delivery (so the
        // first of two replies with one key stays first).
        let order = replies.indices.sorted { (replies[$0].deliveryID, $0) < (replies[$1].deliveryID, $1) }
        var replyIDs: [UUID] = [], deliveries: [Int64] = [], actions: [String] = [], hasText: [Bool] = []
        var texts: [String] = [], occurred: [Double] = [], allowed: [Bool] = []
        let count = order.count
        replyIDs.reserveCapacity(count); deliveries.reserveCapacity(count); actions.reserveCapacity(count)
        hasText.reserveCapacity(count); texts.reserveCapacity(count); occurred.reserveCapacity(count); allowed.reserveCapacity(count)
        for index in order {
            let reply = replies[index]
            replyIDs.append(reply.replyID)
            deliveries.append(reply.deliveryID)
            actions.append(reply.action)
            hasText.append(reply.text != nil)
            // A text that may not be stored is not sent (a NUL is not even
            // valid text for PostgreSQL): the reply is refused all the same.
            texts.append(reply.textAllowed ? reply.text ?? "" : "")
            occurred.append(reply.occurredAt.timeIntervalSince1970)
            allowed.append(reply.textAllowed)
        }
        let call: PostgresQuery = """
            CALL herald_commit_replies(\(replyIDs)::uuid[], \(deliveries)::bigint[], \(actions)::text[], \(hasText)::bool[],
                                       \(texts)::text[], \(occurred)::float8[], \(allowed)::bool[], \(source), NULL, NULL, NULL)
            """
        let client = self.client, logger = self.logger
        return try await DatabaseRetry.withDeadline(Self.storeDeadline, what: "store replies") {
            let rows = try await client.query(call, logger: logger)
            var batch = StoredBatch()
            for try await (stored, refused, duplicates) in rows.decode((Int32, [Int32], [Int32]).self) {
                // Positions in the sorted arrays (1-based) back to the caller's.
                let caller = { (position: Int32) -> Int? in order.indices.contains(Int(position) - 1) ? order[Int(position) - 1] : nil }
                batch = StoredBatch(stored: Int(stored), refused: refused.compactMap(caller).sorted(),
                                    duplicates: duplicates.compactMap(caller).sorted())
            }
            return batch
        }
    }

    /// How long `store` waits for its statement. A connection that closed
    /// under a statement (PostgreSQL restarted) once left the statement
    /// unanswered for good, and with it every reply batch behind it (the
    /// reply fault scenario, about one run in eight); past this the batch
    /// fails as a transient fault (503, the client retries with the same
    /// `reply_id`) and the statement is left behind. A batch takes
    /// milliseconds; the minute leaves room for a lock held a while (a
    /// device's erasure waits for the batches storing replies, and they for it).
    public static let storeDeadline: Duration = .seconds(60)

    /// The notification config document (contract 5) and its ETag.
    public func notificationConfig() async throws -> (body: [UInt8], etag: String) {
        var actions: [NotificationConfig.Action] = []
        for try await (id, title, options, button, placeholder) in try await client.query(
            "SELECT id, title, options, text_button_title, text_placeholder FROM actions", logger: logger
        ).decode((String, String, Int32, String?, String?).self) {
            actions.append(.init(id: id, title: title, options: Int(options), textButtonTitle: button, textPlaceholder: placeholder))
        }
        var categories: [NotificationConfig.Category] = []
        for try await (id, options, list) in try await client.query("""
            SELECT c.id, c.options, coalesce(array_agg(ca.action_id ORDER BY ca.position) FILTER (WHERE ca.action_id IS NOT NULL), '{}')
            FROM categories c LEFT JOIN category_actions ca ON ca.category_id = c.id
            GROUP BY c.id, c.options
            """, logger: logger).decode((String, Int32, [String]).self) {
            categories.append(.init(id: id, actions: list, options: Int(options)))
        }
        let body = NotificationConfig.render(categories: categories, actions: actions)
        let digest = SHA256.hash(data: body).prefix(12).map { String(format: "%02x", $0) }.joined()
        return (body, "\"\(digest)\"")
    }
}
