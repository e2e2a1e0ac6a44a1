import Foundation
import PostgresNIO
@testable import Store
import Testing
import TestSupport

/// How an audience slice reads the users of its devices. Planned as a join,
/// a slice of a large audience hashed its devices and read the users table
/// whole, and every slice did it again: ten million users, 13 slices, 130
/// million user rows. A slice reads each
/// of its devices' users by id instead.
@Suite("Audience slice plan")
struct AudienceSlicePlanTests {
    /// The plan's nodes that read `relation`, as "node type" strings, as
    /// the planner plans the query when it would rather not loop over
    /// index lookups (as it would not for a slice of ten million devices).
    static func reads(_ relation: String, in query: PostgresQuery, _ client: Database) async throws -> [String] {
        let text = try await client.withConnection { conn in
            // For this statement only: the connection goes back to the pool.
            try await conn.query("BEGIN", logger: TestDatabase.logger)
            try await conn.query("SET LOCAL enable_nestloop = off", logger: TestDatabase.logger)
            var text = ""
            for try await plan in try await conn.query(
                PostgresQuery(unsafeSQL: "EXPLAIN (FORMAT JSON) " + query.sql, binds: query.binds),
                logger: TestDatabase.logger).decode(String.self) {
                text += plan
            }
            try await conn.query("ROLLBACK", logger: TestDatabase.logger)
            return text
        }
        let json = try JSONSerialization.jsonObject(with: Data(text.utf8))
        var found: [String] = []
        func walk(_ node: Any) {
            if let list = node as? [Any] { list.forEach(walk) }
            guard let object = node as? [String: Any] else { return }
            if object["Relation Name"] as? String == relation, let type = object["Node Type"] as? String {
                found.append(type)
            }
            object.values.forEach(walk)
        }
        walk(json)
        return found
    }

    @Test func aSliceLooksUpItsDevicesUsersRatherThanReadingTheTableWhole() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue + ";\n" + Fixtures.audience(count: 3_000) + ";\n"
                + Fixtures.campaign(name: "Sliced") + ";\nANALYZE users; ANALYZE devices")
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let id = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Sliced'", as: Int64.self))
            let due = try await stores.campaigns.loadCampaign(id)
            // Every device at once as a join: the planner reads the users whole
            // (what each slice of ten million did), so the check below is one
            // it could fail.
            let whole = try await Self.reads("users", in: try AudienceStore.snapshotQuery(due, skippingWritten: false), client)
            #expect(whole.contains("Seq Scan"), "\(whole)")
            // A slice spanning every device reads its users by id all the same.
            let slice = try await Self.reads("users", in: try AudienceStore.snapshotQuery(
                due, devices: 0...3_000, skippingWritten: false), client)
            #expect(!slice.isEmpty && slice.allSatisfy { $0.hasPrefix("Index") }, "\(slice)")
            // And it writes the rows the join writes.
            #expect(try await stores.audience.snapshot(due, start: true, firstSlice: 1_000).inserted == 1_000)
            #expect(try await client.scalar("""
                SELECT count(*) FROM delivery_status d JOIN devices dv ON dv.id = d.device_id
                WHERE d.campaign_id = \(id) AND d.user_id = dv.user_id AND dv.id <= 1000
                """, as: Int64.self) == 1_000)
        }
    }
}
