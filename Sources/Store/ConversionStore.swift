import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Conversions (`conversions`): stored once per idempotency key.
public struct ConversionStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// What storing a batch did, per conversion in order.
    public enum Outcome: Sendable, Hashable {
        case stored
        /// Its idempotency key was stored before.
        case duplicate
        /// No user has this `external_id`.
        case unknownUser
    }

    /// Stores `conversions` in one statement; `source` says where they came from (`api`, `ingest`).
    public func store(_ conversions: [Conversion], source: String) async throws -> [Outcome] {
        guard !conversions.isEmpty else { return [] }
        let rows = try await client.query("""
            WITH input AS (
                SELECT x.* FROM unnest(\(conversions.map(\.user)), \(conversions.map(\.event)),
                                       \(conversions.map(\.occurredAt)), \(conversions.map { $0.amount ?? "" }),
                                       \(conversions.map { $0.currency ?? "" }), \(conversions.map(\.idempotencyKey)))
                    WITH ORDINALITY AS x(external_id, event, occurred_at, amount, currency, idempotency_key, n)
            ), known AS (
                SELECT i.*, u.id AS user_id FROM input i JOIN users u ON u.external_id = i.external_id
            ), ins AS (
                INSERT INTO conversions (user_id, event, occurred_at, amount, currency, idempotency_key, source)
                SELECT DISTINCT ON (idempotency_key) user_id, event, occurred_at, nullif(amount, '')::numeric,
                       nullif(currency, ''), idempotency_key, \(source)
                FROM known ORDER BY idempotency_key, n
                ON CONFLICT (idempotency_key) DO NOTHING
                RETURNING idempotency_key
            )
            SELECT i.n::int8,
                   CASE WHEN NOT EXISTS (SELECT 1 FROM known k WHERE k.n = i.n) THEN 'unknown_user'
                        WHEN EXISTS (SELECT 1 FROM ins WHERE ins.idempotency_key = i.idempotency_key)
                             AND i.n = (SELECT min(k.n) FROM known k WHERE k.idempotency_key = i.idempotency_key)
                        THEN 'stored' ELSE 'duplicate' END
            FROM input i ORDER BY i.n
            """, logger: logger)
        var outcomes: [Outcome] = []
        for try await (_, outcome) in rows.decode((Int64, String).self) {
            outcomes.append(outcome == "stored" ? .stored : outcome == "duplicate" ? .duplicate : .unknownUser)
        }
        return outcomes
    }
}
