import Crypto
import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A reply that passed every check, ready to be stored.
public struct AcceptedReply: Sendable, Hashable {
    public var replyID: UUID
    public var target: ReplyTarget
    public var action: String
    public var text: String?
    public var occurredAt: Date

    public init(replyID: UUID, target: ReplyTarget, action: String, text: String?, occurredAt: Date) {
        self.replyID = replyID
        self.target = target
        self.action = action
        self.text = text
        self.occurredAt = occurredAt
    }
}

/// Replies in and the notification config out.
public struct ReplyStore: Sendable {
    public let client: PostgresClient
    public let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The deliveries among `ids` that exist, with their campaign's category.
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

    /// Stores replies already checked against their deliveries (the intake
    /// takes its batches with `take`) with one statement,
    /// `herald_store_replies` (Sql/0016),
    /// which commits before it answers: when this returns the replies are
    /// durable (a reply is never acknowledged before), and a `reply_id` seen
    /// before is left alone. Returns the ids stored now. A statement the
    /// server refuses throws its own `PSQLError`, so the caller can tell a
    /// refusal from a transient fault. Not to be called inside a transaction.
    @discardableResult
    public func insert(_ replies: [AcceptedReply], source: String) async throws -> Set<UUID> {
        guard !replies.isEmpty else { return [] }
        let replyIDs = replies.map(\.replyID)
        let deliveries = replies.map(\.target.deliveryID)
        let campaigns = replies.map(\.target.campaignID)
        let devices = replies.map(\.target.deviceID)
        let users = replies.map(\.target.userID)
        let actions = replies.map(\.action)
        let hasText = replies.map { $0.text != nil }
        let texts = replies.map { $0.text ?? "" }
        let occurred = replies.map { $0.occurredAt.timeIntervalSince1970 }
        let rows = try await client.query("""
            CALL herald_store_replies(\(replyIDs)::uuid[], \(deliveries)::bigint[], \(campaigns)::bigint[], \(devices)::bigint[],
                                      \(users)::bigint[], \(actions)::text[], \(hasText)::bool[], \(texts)::text[],
                                      \(occurred)::float8[], \(source), NULL)
            """, logger: logger)
        var stored = Set<UUID>()
        for try await ids in rows.decode([UUID].self) { stored.formUnion(ids) }
        return stored
    }

    /// One reply of an intake batch, as `take` stores it: checked for what
    /// needs no delivery (its token, its text's length and characters).
    public struct IncomingReply: Sendable {
        public var replyID: UUID
        public var deliveryID: Int64
        public var action: String
        public var text: String?
        public var occurredAt: Date
        /// False: its text may not be stored whatever its delivery.
        public var textAllowed: Bool

        public init(replyID: UUID, deliveryID: Int64, action: String, text: String?, occurredAt: Date, textAllowed: Bool) {
            self.replyID = replyID
            self.deliveryID = deliveryID
            self.action = action
            self.text = text
            self.occurredAt = occurredAt
            self.textAllowed = textAllowed
        }
    }

    /// What `take` did with a batch.
    public struct TakenBatch: Sendable {
        /// The deliveries of the batch that exist.
        public var targets: [Int64: ReplyTarget] = [:]
        /// The positions in the batch of the replies that passed the checks
        /// that need their delivery (stored now, or stored before).
        public var passed: Set<Int> = []
        /// The reply ids stored now.
        public var stored: Set<UUID> = []
    }

    /// Looks a batch's deliveries up, stores the replies that pass the checks
    /// that need them and commits, with one statement:
    /// `herald_take_replies` (Sql/0017), which commits before it answers, so
    /// that when this returns the replies are durable. Of replies with the
    /// same `reply_id` the first that passes is stored; one stored before is
    /// left alone. A statement the server refuses throws its own `PSQLError`.
    /// Not to be called inside a transaction.
    public func take(_ replies: [IncomingReply], source: String) async throws -> TakenBatch {
        guard !replies.isEmpty else { return TakenBatch() }
        let replyIDs = replies.map(\.replyID)
        let deliveries = replies.map(\.deliveryID)
        let actions = replies.map(\.action)
        let hasText = replies.map { $0.text != nil }
        // A text that may not be stored is not sent (a NUL is not even valid
        // text for PostgreSQL): the reply is refused all the same.
        let texts = replies.map { $0.textAllowed ? $0.text ?? "" : "" }
        let occurred = replies.map { $0.occurredAt.timeIntervalSince1970 }
        let allowed = replies.map(\.textAllowed)
        let rows = try await client.query("""
            CALL herald_take_replies(\(replyIDs)::uuid[], \(deliveries)::bigint[], \(actions)::text[], \(hasText)::bool[],
                                     \(texts)::text[], \(occurred)::float8[], \(allowed)::bool[], \(source),
                                     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
            """, logger: logger)
        var taken = TakenBatch()
        for try await (found, campaigns, devices, users, categories, categorized, passed, stored)
            in rows.decode(([Int64], [Int64], [Int64], [Int64], [String], [Bool], [Int32], [UUID]).self) {
            Self.add(found, campaigns, devices, users, categories, categorized, to: &taken.targets)
            taken.passed = Set(passed.map { Int($0) - 1 })
            taken.stored = Set(stored)
        }
        return taken
    }

    /// Stores replies through `COPY` into a session-local staging table and
    /// one set-based merge, in a transaction that has committed when this
    /// returns. Of two replies with the same `reply_id`, the first is stored
    /// (the later ones are left out here, so the merge needs no order).
    /// Returns how many were stored now (the others' `reply_id` was stored
    /// before, or earlier in `replies`). The bulk path of `herald ingest`.
    public func copyIn(_ replies: [AcceptedReply], source: String) async throws -> Int {
        guard !replies.isEmpty else { return 0 }
        var seen = Set<UUID>(minimumCapacity: replies.count)
        let firsts = replies.filter { seen.insert($0.replyID).inserted }
        do {
            return try await copyIn(firsts, source: source, skippingStored: false)
        } catch where StoreError.sqlState(of: error) == "23505" {
            // Some reply_id was stored before: the batch again, skipping those.
            return try await copyIn(firsts, source: source, skippingStored: true)
        }
    }

    /// One `copyIn` attempt. The first is a plain INSERT, which PostgreSQL
    /// writes without a speculative insertion per row; a reply_id stored
    /// before fails it (23505), and the batch is written again with
    /// `ON CONFLICT (reply_id) DO NOTHING`.
    private func copyIn(_ firsts: [AcceptedReply], source: String, skippingStored: Bool) async throws -> Int {
        try await committed { conn in
            // ON COMMIT DELETE ROWS: the table stays for the session's next
            // batch, empty; nothing of it is ever seen by another session.
            try await conn.query("""
                CREATE TEMP TABLE IF NOT EXISTS herald_reply_stage (
                    reply_id uuid, delivery_id bigint, campaign_id bigint, device_id bigint,
                    user_id bigint, action text, text text, occurred float8
                ) ON COMMIT DELETE ROWS
                """, logger: logger)
            try await conn.copyFrom(
                table: "herald_reply_stage",
                columns: ["reply_id", "delivery_id", "campaign_id", "device_id", "user_id", "action", "text", "occurred"],
                logger: logger
            ) { writer in
                var buffer = ByteBuffer()
                buffer.reserveCapacity(Self.copyChunkBytes + 4096)
                for reply in firsts {
                    CopyText.row(reply, into: &buffer)
                    if buffer.readableBytes >= Self.copyChunkBytes {
                        try await writer.write(buffer)
                        buffer.clear()
                    }
                }
                if buffer.readableBytes > 0 { try await writer.write(buffer) }
            }
            let rows = try await conn.query("""
                WITH stored AS (
                    INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at, source)
                    SELECT reply_id, delivery_id, campaign_id, device_id, user_id, action, text, to_timestamp(occurred), \(source)
                    FROM herald_reply_stage
                    \(unescaped: skippingStored ? "ON CONFLICT (reply_id) DO NOTHING" : "")
                    RETURNING 1)
                SELECT count(*) FROM stored
                """, logger: logger)
            var stored: Int64 = 0
            for try await count in rows.decode(Int64.self) { stored = count }
            return Int(stored)
        }
    }

    static let copyChunkBytes = 1 << 18

    /// Runs `body` on one connection between BEGIN and COMMIT; returns once
    /// COMMIT has answered. A failure rolls back and is rethrown as it came
    /// (the server's `PSQLError`, not a wrapper), so refusals and transient
    /// faults keep their SQLSTATE.
    func committed<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { conn in
            try await conn.query("BEGIN", logger: logger)
            let value: T
            do {
                value = try await body(conn)
            } catch {
                // A connection that cannot even roll back (lost, cancelled)
                // must not go back to the pool inside a transaction.
                do {
                    try await conn.query("ROLLBACK", logger: logger)
                } catch {
                    try? await conn.close()
                }
                throw error
            }
            try await conn.query("COMMIT", logger: logger)
            return value
        }
    }

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

/// Rows in `COPY … FROM STDIN (FORMAT text)`: tab-separated, `\N` for NULL,
/// backslash, tab, newline and carriage return escaped.
enum CopyText {
    static func row(_ reply: AcceptedReply, into buffer: inout ByteBuffer) {
        UUIDText.withText(reply.replyID) { _ = buffer.writeBytes($0) }
        for number in [reply.target.deliveryID, reply.target.campaignID, reply.target.deviceID, reply.target.userID] {
            buffer.writeInteger(UInt8(ascii: "\t"))
            buffer.writeString(String(number))
        }
        buffer.writeInteger(UInt8(ascii: "\t"))
        field(reply.action, into: &buffer)
        buffer.writeInteger(UInt8(ascii: "\t"))
        if let text = reply.text {
            field(text, into: &buffer)
        } else {
            buffer.writeStaticString("\\N")
        }
        buffer.writeInteger(UInt8(ascii: "\t"))
        let seconds = reply.occurredAt.timeIntervalSince1970
        if seconds == seconds.rounded(.down), abs(seconds) < 1e15 {
            buffer.writeString(String(Int64(seconds)))
        } else {
            buffer.writeString("\(seconds)")
        }
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    static func field(_ text: String, into buffer: inout ByteBuffer) {
        let utf8 = text.utf8
        if !utf8.contains(where: { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            buffer.writeString(text)
            return
        }
        for byte in utf8 {
            switch byte {
            case 0x5C: buffer.writeStaticString("\\\\")
            case 0x09: buffer.writeStaticString("\\t")
            case 0x0A: buffer.writeStaticString("\\n")
            case 0x0D: buffer.writeStaticString("\\r")
            default: buffer.writeInteger(byte)
            }
        }
    }
}
