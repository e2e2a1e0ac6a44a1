import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

@Suite("Operators' controls and their audit")
struct OperatorControlTests {
    @Test func cancellingWithNoRunCancelsEveryQueuedDelivery() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 30))
            try await client.exec(Fixtures.campaign(name: "Stop it"))
            try await client.exec("""
                UPDATE campaigns SET status = 'running', snapshot_at = now();
                INSERT INTO deliveries (campaign_id, device_id, user_id, status)
                SELECT c.id, d.id, d.user_id, CASE WHEN d.id <= 10 THEN 'sent' ELSE 'queued' END FROM campaigns c, devices d;
                UPDATE campaigns SET status = 'cancelled';
                """)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'queued'", as: Int64.self) == 0)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'cancelled'", as: Int64.self) == 20)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'sent'", as: Int64.self) == 10)
            #expect(try await client.scalar("SELECT queued FROM analyst.campaign_funnel", as: Int64.self) == 0)
        }
    }

    @Test func everyStatusChangeIsAuditedWithWhoAndWhy() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.campaign(name: "Watched"))
            try await client.exec("UPDATE campaigns SET status = 'paused'")
            try await client.withTransaction(logger: TestDatabase.logger) { conn in
                try await conn.query("SET LOCAL herald.reason = 'legal review'", logger: TestDatabase.logger)
                try await conn.query("UPDATE campaigns SET status = 'cancelled'", logger: TestDatabase.logger)
            }
            try await client.exec("UPDATE campaigns SET name = 'Renamed'")  // not a status change
            var rows: [String] = []
            for try await (from, to, by, why) in try await client.query("""
                SELECT coalesce(from_status, '-'), to_status, changed_by, coalesce(reason, '-')
                FROM analyst.campaign_status_changes ORDER BY changed_at
                """, logger: TestDatabase.logger).decode((String, String, String, String).self) {
                rows.append("\(from)>\(to) \(why)")
                #expect(by.hasPrefix("herald"))   // the role, and the application name
            }
            #expect(rows == ["->scheduled -", "scheduled>paused -", "paused>cancelled legal review"])
        }
    }
}
