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
        let amounts: [String] = conversions.map { $0.amount ?? "" }
        let currencies: [String] = conversions.map { $0.currency ?? "" }
        let query = try SQLQueries.named("conversions/store").query([
            "users": .value(conversions.map(\.user)), "events": .value(conversions.map(\.event)),
            "occurred_ats": .value(conversions.map(\.occurredAt)), "amounts": .value(amounts),
            "currencies": .value(currencies), "idempotency_keys": .value(conversions.map(\.idempotencyKey)),
            "source": .value(source),
        ])
        let rows = try await client.query(query, logger: logger)
        var outcomes: [Outcome] = []
        for try await (_, outcome) in rows.decode((Int64, String).self) {
            outcomes.append(outcome == "stored" ? .stored : outcome == "duplicate" ? .duplicate : .unknownUser)
        }
        return outcomes
    }
}
