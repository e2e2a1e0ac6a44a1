import APNs
import Foundation
import HeraldCore
import PostgresNIO
@testable import Runner
import Store
import TestSupport
import Testing

/// Overlapping campaigns in real runs against the simulator (HTTP/2 + TLS).
@Suite("Overlapping campaigns in a run", .serialized)
struct OverlapRunTests {
    /// A paced campaign due first (30 devices at 4 a second: about 7 s) and a quick one to everyone (300),
    /// which ends within the paced one's time with room to spare on a loaded machine.
    static func night(_ client: Database) async throws {
        try await client.exec(Fixtures.catalogue)
        try await client.exec(Fixtures.audience(count: 300))
        try await client.exec(#"INSERT INTO segments (name, rule) VALUES ('few', '{"attr": "attributes.orders", "op": "=", "value": 1}')"#)
        try await client.exec(Fixtures.campaign(name: "Paced", segment: "few"))
        try await client.exec(Fixtures.campaign(name: "Quick"))
        try await client.exec("""
            UPDATE campaigns SET rate_per_minute = 240, send_at = now() - interval '1 minute' WHERE name = 'Paced';
            UPDATE campaigns SET send_at = now() - interval '10 seconds' WHERE name = 'Quick';
            """)
    }

    /// Each campaign's first and last send, by the ledger.
    static func spans(_ client: Database) async throws -> [String: (first: Date, last: Date, sent: Int64)] {
        var out: [String: (first: Date, last: Date, sent: Int64)] = [:]
        for try await (name, first, last, sent) in try await client.query("""
            SELECT c.name, min(d.sent_at), max(d.sent_at), count(*) FROM delivery_status d JOIN campaigns c ON c.id = d.campaign_id
            WHERE d.status = 'sent' GROUP BY c.name
            """, logger: TestDatabase.logger).decode((String, Date, Date, Int64).self) {
            out[name] = (first, last, sent)
        }
        return out
    }

    @Test("a paced campaign no longer holds back the next: both send at once, sharing the run's limits; one at a time, the second waits")
    func aSlowCampaignDoesNotHoldBackTheNext() async throws {
        for atOnce in [2, 1] {
            try await TestDatabase.with { client, _ in
                try await Self.night(client)
                try await withSimulator { sim in
                    var options = RunOptions(topic: sim.topic, batchSize: 100, concurrency: 50)
                    options.campaignsAtOnce = atOnce
                    let summary = try await sendRun(client, apns: sim.clientConfiguration, options: options)
                    #expect(summary.campaigns.map(\.name) == ["Paced", "Quick"], "in DueOrder")
                    #expect(summary.figures.sent == 330 && summary.campaigns.allSatisfy(\.completed))
                    let accepted = await sim.simulator.accepted
                    #expect(accepted.count == 330 && Set(accepted.map(\.deviceToken)).count == 300)
                    let spans = try await Self.spans(client)
                    let paced = try #require(spans["Paced"]), quick = try #require(spans["Quick"])
                    #expect(paced.sent == 30 && quick.sent == 300)
                    #expect(paced.last.timeIntervalSince(paced.first) >= 5, "the pace holds: 30 at 4 a second (sent_at is the write's time)")
                    if atOnce == 2 {
                        #expect(quick.last < paced.last, "the quick campaign ended while the paced one sent")
                    } else {
                        #expect(quick.first >= paced.last, "one after another")
                    }
                }
            }
        }
    }
}
