import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// The ledger's layout keeps a run's row writes HOT (Sql/0011, Sql/0012):
/// PostgreSQL writes an updated row on the same page and touches no index
/// only when no index names a column the update changes. A claim and an
/// outcome write update every delivery of a campaign; an index naming one
/// of the columns they change makes each of them write an entry into every
/// index of the row (measured: five times the database time of the claim).
@Suite("Ledger layout")
struct LedgerLayoutTests {
    /// The columns a claim (`DeliveryLedger.claimWindow`, the config refresh
    /// claim) or an outcome write (`DeliveryLedger.record`) changes on a
    /// campaign's delivery.
    static let written = ["status", "last_error", "claimed_by", "lease_expires_at", "apns_id", "updated_at",
                          "attempts", "not_before", "sent_at"]

    @Test func noIndexOfTheLedgerNamesAColumnThatClaimsOrOutcomesChange() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.campaign(name: "Partitioned"))
            try await client.exec("SELECT herald_delivery_partition(id) FROM campaigns")
            var definitions: [String] = []
            for try await def in try await client.query("""
                SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
                WHERE i.indrelid = 'deliveries'::regclass
                   OR i.indrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'deliveries'::regclass)
                """, logger: TestDatabase.logger).decode(String.self) {
                definitions.append(def)
            }
            // The parent's, the refresh, default and campaign partitions' five,
            // and the DEFAULT partition's own index of ledger order (Sql/0029).
            #expect(definitions.count >= 4 * 5 + 1)
            // A campaign's partition keeps its rows in one index of ledger order
            // (`id`), not two (Sql/0029: every audience row paid for both).
            let ordered = definitions.filter { $0.contains("deliveries_c") && $0.contains("btree (campaign_id, id)") }
            #expect(ordered.isEmpty, "\(ordered)")
            for def in definitions {
                // What follows USING: the method, the key columns, the predicate.
                let tail = def.components(separatedBy: " USING ").last ?? def
                let words = Set(tail.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).map(String.init))
                for column in Self.written {
                    #expect(!words.contains(column), "\(def) names \(column), which a claim or an outcome write changes")
                }
            }
        }
    }
}
