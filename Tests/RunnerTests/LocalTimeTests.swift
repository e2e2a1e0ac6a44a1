import Foundation
import PostgresNIO
import Runner
import Store
import Testing
import TestSupport

/// A campaign at a local wall-clock time (Sql/0022): each device becomes due
/// when its user's zone reaches it; one whose moment had passed when the
/// campaign was written goes at once, or is skipped, as the marketer chose.
@Suite("Local time", .serialized)
struct LocalTimeTests {
    /// 30 users in three zones: UTC+3 (its moment passed 2 h ago), UTC and
    /// UTC−3 (1 h and 4 h from now), for a local time one hour after now in UTC.
    func setUp(_ client: Database, missed: String) async throws -> Int64 {
        try await client.exec(Fixtures.catalogue)
        try await client.exec(Fixtures.audience(count: 30))
        try await client.exec("""
            UPDATE users SET time_zone = (ARRAY['Etc/GMT-3', 'UTC', 'Etc/GMT+3'])[1 + id % 3]
            """)
        try await client.exec(Fixtures.campaign(name: "Nine"))
        try await client.exec("""
            UPDATE campaigns SET send_at_local = date_trunc('minute', now() AT TIME ZONE 'UTC') + interval '1 hour',
                                 local_missed = '\(missed)', created_at = now()
            """)
        return try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Nine'", as: Int64.self))
    }

    @Test func eachDeviceIsDueAtItsOwnLocalTime() async throws {
        try await TestDatabase.with { client, _ in
            let id = try await setUp(client, missed: "send")
            // send_at follows send_at_local: the first zone (UTC+14) reaches it 13 h before UTC does.
            #expect(try await client.scalar("""
                SELECT send_at = send_at_local AT TIME ZONE 'Etc/GMT-14' AND send_at < now() FROM campaigns WHERE id = \(id)
                """, as: Bool.self) == true)
            try await withSimulator { sim in
                let run = try await sendRun(client, apns: sim.clientConfiguration)
                // Only UTC+3's ten went out (their moment had passed when it was written: at once).
                #expect(run.figures.sent == 10)
                let accepted = Set(await sim.simulator.accepted.map(\.deviceToken))
                let plus3 = try await client.query("""
                    SELECT d.token FROM devices d JOIN users u ON u.id = d.user_id WHERE u.time_zone = 'Etc/GMT-3'
                    """)
                var expected = Set<String>()
                for try await token in plus3.decode(String.self) { expected.insert(token) }
                #expect(accepted == expected)
            }
            // The others wait for their own 09:00: UTC's in an hour, UTC−3's in four.
            let waits = try await client.query("""
                SELECT u.time_zone, min(extract(epoch FROM d.not_before - now()))::float8, max(extract(epoch FROM d.not_before - now()))::float8
                FROM delivery_status d JOIN users u ON u.id = d.user_id
                WHERE d.campaign_id = \(id) AND d.status = 'queued' GROUP BY u.time_zone ORDER BY u.time_zone
                """)
            var byZone: [String: (Double, Double)] = [:]
            for try await (zone, low, high) in waits.decode((String, Double, Double).self) { byZone[zone] = (low, high) }
            #expect(Set(byZone.keys) == ["UTC", "Etc/GMT+3"])
            #expect(byZone["UTC"].map { $0.0 > 0 && $0.1 <= 3_600 } == true, "\(byZone)")
            #expect(byZone["Etc/GMT+3"].map { $0.0 > 3 * 3_600 && $0.1 <= 4 * 3_600 } == true, "\(byZone)")
        }
    }

    @Test func aMomentPassedWhenWrittenIsSkippedWhenTheMarketerSaysSo() async throws {
        try await TestDatabase.with { client, _ in
            let id = try await setUp(client, missed: "skip")
            try await withSimulator { sim in
                let run = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(run.figures.sent == 0)
                #expect(await sim.simulator.accepted.isEmpty)
            }
            #expect(try await client.scalar("""
                SELECT count(*) FROM delivery_status WHERE campaign_id = \(id) AND status = 'skipped'
                  AND last_error = 'its local send time had passed when the campaign was written'
                """, as: Int64.self) == 10)
            #expect(await client.refusal("UPDATE campaigns SET local_missed = 'later' WHERE id = \(id)")?
                .contains("campaign local_missed must be send or skip") == true)
        }
    }
}
