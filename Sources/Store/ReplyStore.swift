import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Replies in and the notification config out.
public struct ReplyStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// One reply to store: checked for what needs no delivery (its token,
    /// its text's length and characters).
    public struct IncomingReply: Sendable {
        public var replyID: UUID
        public var deliveryID: Int64
        public var action: String
        public var text: String?
        public var occurredAt: Date
        /// What is wrong with its text, found where the reply was read: it
        /// may not be stored whatever its delivery, and the refusal says this.
        public var textProblem: ReplyError?
        public var textAllowed: Bool { textProblem == nil }

        public init(replyID: UUID, deliveryID: Int64, action: String, text: String?, occurredAt: Date, textProblem: ReplyError? = nil) {
            self.replyID = replyID
            self.deliveryID = deliveryID
            self.action = action
            self.text = text
            self.occurredAt = occurredAt
            self.textProblem = textProblem
        }
    }

    /// What `store` did with a batch, by position in the batch.
    public struct StoredBatch: Sendable, Hashable {
        /// Replies stored now.
        public var stored = 0
        /// The replies refused, ascending, each with why, as the database
        /// decided it (`herald_refusal_reasons`).
        public var refused: [Int] { refusals.map(\.position) }
        public var refusals: [Refusal] = []
        /// The replies whose values the database itself refused (a
        /// constraint of the table), each with the server's reason, when the
        /// batch was taken apart (`storeTakingApart`). Ascending.
        public var refusedByDatabase: [RefusedByDatabase] = []
        /// The replies that passed but whose delivery and `reply_id` were
        /// stored before, or earlier in the batch. Ascending.
        public var duplicates: [Int] = []

        public init(stored: Int = 0, refusals: [Refusal] = [], duplicates: [Int] = [], refusedByDatabase: [RefusedByDatabase] = []) {
            self.stored = stored
            self.refusals = refusals
            self.duplicates = duplicates
            self.refusedByDatabase = refusedByDatabase
        }
    }

    /// A reply the database refused the statement for: the constraint it
    /// violated, or the server's message.
    public struct RefusedByDatabase: Sendable, Hashable {
        public var position: Int
        public var reason: String
    }

    /// Why the database refused one reply of a batch: the one authority on
    /// what needs the delivery and the catalogue (`herald_refusal_reasons`).
    public struct Refusal: Sendable, Hashable {
        public enum Reason: String, Sendable {
            /// No such delivery.
            case unknownDelivery = "unknown_delivery"
            /// Not an action of the campaign's category.
            case actionNotAllowed = "action_not_allowed"
            /// Text, where the action takes none.
            case textNotAllowed = "text_not_allowed"
            /// The caller's own check of the text failed (`textAllowed` false).
            case textRefused = "text_refused"
        }

        /// The reply's position in the batch as given.
        public var position: Int
        public var reason: Reason
        /// The campaign's category, when the delivery was found and has one.
        public var category: String?
        /// For `textRefused`, the problem the caller found (`IncomingReply.textProblem`).
        public var textProblem: ReplyError?

        public init(position: Int, reason: Reason, category: String? = nil, textProblem: ReplyError? = nil) {
            self.position = position
            self.reason = reason
            self.category = category
            self.textProblem = textProblem
        }
    }

    /// Looks a batch's deliveries up, checks each reply against its
    /// campaign's category, stores what passes, says why the rest was
    /// refused and commits, with one statement: `herald_commit_replies`
    /// (its reasons from `herald_refusal_reasons`), which commits before it answers, so that when this returns the replies are durable. A
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
                                       \(texts)::text[], \(occurred)::float8[], \(allowed)::bool[], \(source),
                                       NULL::integer, NULL::integer[], NULL::integer[], NULL::text[], NULL::text[])
            """
        let client = self.client, logger = self.logger
        // A failover fails the batch at once (a 503 the client retries), not at the deadline.
        return try await DatabaseRetry.withDeadline(Self.storeDeadline, what: "store replies") { try await client.failingOnServerChange {
            let rows = try await client.query(call, logger: logger)
            var batch = StoredBatch()
            for try await (stored, refused, duplicates, reasons, categories)
                in rows.decode((Int32, [Int32], [Int32], [String], [String]).self) {
                // Positions in the sorted arrays (1-based) back to the caller's.
                let caller = { (position: Int32) -> Int? in order.indices.contains(Int(position) - 1) ? order[Int(position) - 1] : nil }
                var refusals: [Refusal] = []
                for (index, position) in refused.enumerated() {
                    guard let at = caller(position) else { continue }
                    let code = index < reasons.count ? reasons[index] : ""
                    let category = index < categories.count && !categories[index].isEmpty ? categories[index] : nil
                    // A code this build does not know is the action's (the statement refused it).
                    let reason = Refusal.Reason(rawValue: code) ?? .actionNotAllowed
                    refusals.append(Refusal(position: at, reason: reason, category: category,
                                            textProblem: reason == .textRefused ? replies[at].textProblem : nil))
                }
                batch = StoredBatch(stored: Int(stored), refusals: refusals.sorted { $0.position < $1.position },
                                    duplicates: duplicates.compactMap(caller).sorted())
            }
            return batch
        } }
    }

    /// `store`, for a batch in which the database may refuse one reply's
    /// values (a constraint of the table fails the whole statement): the
    /// batch is then taken apart by halves, each stored on its own, down to
    /// the refused replies, so one reply never sinks the others. Positions
    /// are the caller's. The one fallback of the batcher and of ingest.
    public func storeTakingApart(_ replies: [IncomingReply], source: String) async throws -> StoredBatch {
        try await storeTakingApart(replies[...], source: source)
    }

    private func storeTakingApart(_ replies: ArraySlice<IncomingReply>, source: String) async throws -> StoredBatch {
        do {
            let batch = try await store(Array(replies), source: source)
            let offset = replies.startIndex
            return StoredBatch(stored: batch.stored,
                               refusals: batch.refusals.map {
                                   Refusal(position: $0.position + offset, reason: $0.reason, category: $0.category, textProblem: $0.textProblem)
                               },
                               duplicates: batch.duplicates.map { $0 + offset })
        } catch where DatabaseFault(error) == .refusedValues {
            guard replies.count > 1 else {
                var batch = StoredBatch()
                batch.refusedByDatabase = [RefusedByDatabase(position: replies.startIndex,
                                                             reason: StoreError.constraint(of: error) ?? ErrorText.describe(error))]
                return batch
            }
            let middle = replies.startIndex + replies.count / 2
            var first = try await storeTakingApart(replies[..<middle], source: source)
            let rest = try await storeTakingApart(replies[middle...], source: source)
            first.stored += rest.stored
            first.refusals += rest.refusals
            first.duplicates += rest.duplicates
            first.refusedByDatabase += rest.refusedByDatabase
            return first
        }
    }

    /// How long `store` waits for its statement: a connection closed under it
    /// (PostgreSQL restarted) may never answer, so past this the batch fails as
    /// a transient fault (503, the client retries with the same `reply_id`); the
    /// minute leaves room for a lock held a while (a device's erasure and the
    /// batches storing replies wait for each other).
    public static let storeDeadline: Duration = .seconds(60)
}
