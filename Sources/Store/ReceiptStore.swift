import ExtensionKit
import Foundation
import Logging
import PostgresNIO

/// Delivery receipts (contract 8, `receipts`): stored once per delivery.
public struct ReceiptStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// What storing a batch did: how many were new, and the delivery ids
    /// that are no delivery. The others were stored before.
    public struct Stored: Sendable, Hashable {
        public var stored: Int
        public var unknown: Set<Int64>
    }

    /// Stores `receipts` (their tokens already checked) in one statement.
    public func store(_ receipts: [Receipt]) async throws -> Stored {
        guard !receipts.isEmpty else { return Stored(stored: 0, unknown: []) }
        let rows = try await client.query("""
            SELECT stored, unknown FROM herald_store_receipts(
                \(receipts.map(\.delivery)), \(receipts.map(\.arrivedAt)),
                \(receipts.map { Self.flag($0.sealedOpened) }), \(receipts.map { Self.flag($0.mediaAttached) }))
            """, logger: logger)
        for try await (stored, unknown) in rows.decode((Int32, [Int64]).self) {
            return Stored(stored: Int(stored), unknown: Set(unknown))
        }
        return Stored(stored: 0, unknown: [])
    }

    /// A flag as the statement takes it: 1 true, 0 false, -1 absent.
    static func flag(_ value: Bool?) -> Int16 { value.map { $0 ? 1 : 0 } ?? -1 }
}
