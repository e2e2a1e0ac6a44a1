import Foundation
import HeraldCore
import Store
import Testing
import TestSupport

/// A delivery's apns-id derived from its id (Sql/0043; docs/DESIGN.md, "The
/// apns-id"): every send of a delivery carries the same one, stored or not.
@Suite("Derived apns-id")
struct APNsIDTests {
    /// The golden table: the layout DESIGN states, byte for byte (the prefix,
    /// 0x8001, the id big-endian with its top two bits 10).
    static let golden: [(id: Int64, prefix: String, uuid: String)] = [
        (1, "a1b2c3d4e5f6", "a1b2c3d4-e5f6-8001-8000-000000000001"),
        (123_456_789, "a1b2c3d4e5f6", "a1b2c3d4-e5f6-8001-8000-0000075bcd15"),
        (0x1234_5678_9abc_def0, "ffffffffffff", "ffffffff-ffff-8001-9234-56789abcdef0"),
        (4_611_686_018_427_387_903, "000000000000", "00000000-0000-8001-bfff-ffffffffffff"),
    ]

    @Test("herald_apns_id gives the golden table's UUIDs, each a version 8 UUID of the RFC 9562 variant")
    func goldenTable() async throws {
        try await TestDatabase.with { client, _ in
            for row in Self.golden {
                let made = try #require(try await client.scalar(
                    "SELECT herald_apns_id(\(row.id)::bigint, '\(row.prefix)')::text", as: String.self))
                #expect(made == row.uuid, "id \(row.id)")
                let bytes = try #require(UUID(uuidString: made)).uuid
                #expect(bytes.6 >> 4 == 8 && bytes.8 >> 6 == 0b10, "version and variant of \(made)")
            }
        }
    }

    @Test("the deployment has one prefix of 48 bits, and herald_apns_id(id) uses it")
    func deploymentPrefix() async throws {
        try await TestDatabase.with { client, _ in
            let prefix = try #require(try await client.scalar("SELECT prefix FROM apns_id_prefix", as: String.self))
            #expect(prefix.count == 12 && prefix.allSatisfy(\.isHexDigit))
            #expect(try await client.scalar("SELECT count(*) FROM apns_id_prefix", as: Int64.self) == 1)
            #expect(try await client.scalar(
                "SELECT herald_apns_id(42) = herald_apns_id(42, '\(prefix)')", as: Bool.self) == true)
            // One row: a second prefix would give a repeat another apns-id.
            await #expect(throws: (any Error).self) {
                try await client.exec("INSERT INTO apns_id_prefix (id, prefix) VALUES (false, '000000000000')")
            }
        }
    }

    @Test("a claim gives each delivery its derived apns-id, and a run taking over a lapsed claim sends the same one, stored or not")
    func claimsCarryTheDerivedID() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue + ";\n" + Fixtures.audience(count: 12) + ";\n"
                + Fixtures.campaign(name: "Poster"))
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let campaign = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Poster'", as: Int64.self))
            #expect(try await stores.audience.snapshot(try await stores.campaigns.loadCampaign(campaign), start: true).inserted == 12)
            let first = try #require(try await client.scalar("INSERT INTO runs (host, pid) VALUES ('t', 1) RETURNING id", as: Int64.self))
            let claimed = try await stores.ledger.claim(campaign: campaign, run: first, limit: 100, lease: .seconds(60))
            #expect(claimed.count == 12)
            var derived: [Int64: UUID] = [:]
            for delivery in claimed {
                let id = delivery.target.deliveryID
                derived[id] = UUID(uuidString: try #require(try await client.scalar(
                    "SELECT herald_apns_id(\(id))::text", as: String.self)))
                #expect(delivery.target.apnsID == derived[id], "delivery \(id)")
            }
            // The first run's lease lapses; half of its rows never had their
            // apns-id stored (as the ledger by ranges stores none).
            try await client.exec("""
                UPDATE runs SET lease_expires_at = now() - interval '1 minute' WHERE id = \(first);
                UPDATE deliveries SET apns_id = NULL WHERE campaign_id = \(campaign) AND id % 2 = 0
                """)
            let second = try #require(try await client.scalar("INSERT INTO runs (host, pid) VALUES ('t', 2) RETURNING id", as: Int64.self))
            let again = try await stores.ledger.claim(campaign: campaign, run: second, limit: 100, lease: .seconds(60))
            #expect(again.count == 12)
            for delivery in again {
                #expect(delivery.target.apnsID == derived[delivery.target.deliveryID], "delivery \(delivery.target.deliveryID)")
            }
        }
    }
}
