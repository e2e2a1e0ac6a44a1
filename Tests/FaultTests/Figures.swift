import Crypto
import Foundation
import PostgresNIO
import Store
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What the ledger and the simulator's log say, compared.
struct Figures: CustomStringConvertible {
    var scenario: String
    var runs = 0
    var kills = 0
    var targeted = 0
    var delivered = 0
    var repeated = 0
    var lost = 0
    var failed = 0
    var sentInLedger = 0
    var repeatsWithOtherCollapseID = 0
    var repeatsWithOtherAPNsID = 0
    var ledgerAPNsIDMismatch = 0
    var leftover = 0

    var description: String {
        "fault suite [\(scenario)]: runs \(runs), kills \(kills), targeted \(targeted), delivered \(delivered), repeated \(repeated), lost \(lost), failed \(failed)"
    }
}

/// Compares the simulator's accepted log with the ledger of `campaign`.
func compare(_ scenario: String, client: Database, simulator: SimulatorProcess, campaign: Int64,
             collapseID: String) async throws -> Figures {
    try await compare(scenario, client: client, accepted: try simulator.accepted(), campaign: campaign, collapseID: collapseID)
}

func compare(_ scenario: String, client: Database, accepted: [SimulatorProcess.Accepted], campaign: Int64,
             collapseID: String) async throws -> Figures {
    var f = Figures(scenario: scenario)
    var ledger: [String: (status: String, apnsID: String?)] = [:]
    let rows = try await client.query("""
        SELECT dv.token, d.status, d.apns_id::text FROM delivery_status d JOIN devices dv ON dv.id = d.device_id
        WHERE d.campaign_id = \(campaign)
        """, logger: TestDatabase.logger)
    for try await (token, status, id) in rows.decode((String, String, String?).self) {
        ledger[token] = (status, id)
    }
    f.targeted = ledger.count
    f.sentInLedger = ledger.values.filter { $0.status == "sent" }.count
    f.failed = ledger.values.filter { $0.status == "failed" }.count
    f.leftover = ledger.values.filter { $0.status == "queued" || $0.status == "in_flight" }.count
    var firstID: [String: String] = [:]
    var count: [String: Int] = [:]
    for a in accepted {
        count[a.token, default: 0] += 1
        if a.collapseID != collapseID { f.repeatsWithOtherCollapseID += 1 }
        if let first = firstID[a.token] {
            if first != a.apnsID { f.repeatsWithOtherAPNsID += 1 }
        } else {
            firstID[a.token] = a.apnsID
        }
    }
    f.delivered = count.count
    f.repeated = count.values.reduce(0) { $0 + $1 - 1 }
    // Lost: a device the ledger says got it (or should have) that APNs never accepted.
    let notOwed: Set<String> = ["skipped", "invalid", "cancelled", "expired"]
    f.lost = ledger.filter { !notOwed.contains($0.value.status) && count[$0.key] == nil }.count
    f.ledgerAPNsIDMismatch = firstID.filter { ledger[$0.key]?.apnsID?.lowercased() != $0.value }.count
    return f
}

/// `body` on a scenario's own database, migrated first.
func withMigrated<T: Sendable>(_ database: DatabaseConfiguration, _ body: @Sendable (Database) async throws -> T) async throws -> T {
    try await withPostgres(database, logger: TestDatabase.logger) { client in
        try await Migrator(directory: TestDatabase.sqlDirectory).migrate(client: client, logger: TestDatabase.logger)
        return try await body(client)
    }
}

/// A poster to `devices` devices, sent to each (as a run would have recorded
/// it): the deliveries replies may answer, by id.
func sentDeliveries(_ client: Database, devices: Int) async throws -> [Int64] {
    try await client.exec(Fixtures.catalogue + ";\n" + Fixtures.audience(count: devices) + ";\n"
        + Fixtures.campaign(name: "Poster") + ";\n" + """
        INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
        SELECT c.id, d.id, d.user_id, 'sent', now() FROM campaigns c CROSS JOIN devices d ORDER BY d.id
        """)
    var ids: [Int64] = []
    for try await id in try await client.query("SELECT id FROM delivery_status ORDER BY id", logger: TestDatabase.logger)
        .decode(Int64.self) { ids.append(id) }
    return ids
}
