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
    /// alone would plan and probe every partition: the campaigns that may
    /// hold these ids are read from `delivery_id_ranges` first, and the
    /// ledger is then read with them named, which PostgreSQL plans against
    /// those partitions only. Ids in no range (rows written by hand) are
    /// looked up across the whole ledger.
    public func targets(_ ids: [Int64]) async throws -> [Int64: ReplyTarget] {
        guard !ids.isEmpty else { return [:] }
        var campaigns = Set<Int64>()
        var unranged: [Int64] = []
        for try await (id, campaign) in try await client.query("""
            SELECT i.id, r.campaign_id
            FROM unnest(\(ids)::bigint[]) AS i(id) LEFT JOIN delivery_id_ranges r ON r.ids @> i.id
            """, logger: logger).decode((Int64, Int64?).self) {
            if let campaign { campaigns.insert(campaign) } else { unranged.append(id) }
        }
        var out: [Int64: ReplyTarget] = [:]
        if !campaigns.isEmpty {
            try await lookUp(ids, campaigns: Array(campaigns), into: &out)
        }
        if !unranged.isEmpty {
            try await lookUp(unranged, campaigns: nil, into: &out)
        }
        return out
    }

    private func lookUp(_ ids: [Int64], campaigns: [Int64]?, into out: inout [Int64: ReplyTarget]) async throws {
        let rows: PostgresRowSequence
        if let campaigns {
            rows = try await client.query("""
                SELECT d.id, d.campaign_id, d.device_id, d.user_id, c.category_id
                FROM deliveries d JOIN campaigns c ON c.id = d.campaign_id
                WHERE d.campaign_id = ANY(\(campaigns)::bigint[]) AND d.id = ANY(\(ids)::bigint[])
                """, logger: logger)
        } else {
            rows = try await client.query("""
                SELECT d.id, d.campaign_id, d.device_id, d.user_id, c.category_id
                FROM deliveries d JOIN campaigns c ON c.id = d.campaign_id
                WHERE d.id = ANY(\(ids)::bigint[])
                """, logger: logger)
        }
        for try await (id, campaign, device, user, category) in rows.decode((Int64, Int64, Int64, Int64, String?).self) {
            out[id] = ReplyTarget(deliveryID: id, campaignID: campaign, deviceID: device, userID: user, categoryID: category)
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

    /// Stores replies with one statement; a `reply_id` seen before is left
    /// alone. Returns the ids stored now.
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
            INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at, source)
            SELECT r.reply_id, r.delivery_id, r.campaign_id, r.device_id, r.user_id, r.action,
                   CASE WHEN r.has_text THEN r.text END, to_timestamp(r.occurred), \(source)
            FROM unnest(\(replyIDs)::uuid[], \(deliveries)::bigint[], \(campaigns)::bigint[], \(devices)::bigint[],
                        \(users)::bigint[], \(actions)::text[], \(hasText)::bool[], \(texts)::text[], \(occurred)::float8[])
                 AS r(reply_id, delivery_id, campaign_id, device_id, user_id, action, has_text, text, occurred)
            ON CONFLICT (reply_id) DO NOTHING
            RETURNING reply_id
            """, logger: logger)
        var stored = Set<UUID>()
        for try await id in rows.decode(UUID.self) { stored.insert(id) }
        return stored
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
