import Foundation
import HeraldCore
import PostgresNIO
import Store
import TestSupport
import Testing

// MARK: Replies with PostgreSQL killed

extension FaultSuite {
    /// A reply answered 2xx is committed, and a commit at PostgreSQL's
    /// default durability survives a crash: a real `herald serve` takes
    /// replies from concurrent clients while its PostgreSQL is stopped
    /// twice with `pg_ctl stop -m immediate` (no checkpoint, WAL replayed at
    /// start); every reply answered 2xx is stored, none twice.
    @Test func acknowledgedRepliesSurvivePostgresKilledAtDefaultDurability() async throws {
        try await Self.repliesThroughPostgresKills(durable: true)
    }

    static func repliesThroughPostgresKills(durable: Bool) async throws {
        try await withScratch { dir in
            let cluster = try await DedicatedCluster.start(in: dir, durable: durable)
            do {
                let database = try DatabaseConfiguration(url: cluster.url, maxConnections: 4)
                let count = 600
                let deliveries = try await withMigrated(database) { client in
                    return try await sentDeliveries(client, devices: count)
                }
                let secret = replySecret()
                let replies = try Self.pendingReplies(deliveries, secret: secret)
                let server = try await Self.startIntake(database: database, secret: secret, dir: dir)

                let ledger = ReplyLedger()
                let senders = Self.sendAll(replies, server: server, ledger: ledger)
                // Killed while replies are being stored: what was answered just before must survive.
                let clock = ContinuousClock()
                let began = clock.now
                var phases: [String] = []
                var outages: [(from: ContinuousClock.Instant, to: ContinuousClock.Instant)] = []
                for share in [1, 2] {
                    try await waitUntil("\(share)/3 of the replies answered", limit: .seconds(120)) {
                        await ledger.answered >= share * count / 3
                    }
                    let killed = clock.now
                    let before = await ledger.answered
                    try await cluster.kill(down: .seconds(1))
                    let up = clock.now
                    outages.append((killed, up))
                    try await waitUntil("a reply answered after the kill", limit: .seconds(120)) { await ledger.answered > before }
                    phases.append("killed at \(before) answered, down \(Self.seconds(up - killed)) s, answering again \(Self.seconds(clock.now - up)) s later")
                }
                try await senders.value
                phases.append("\(Self.seconds(clock.now - began)) s in all")
                try await server.stop()

                let answered = await ledger.snapshot()
                var heldCounts: [Int] = []
                for outage in outages { heldCounts.append(await ledger.heldThrough(from: outage.from, to: outage.to)) }
                let held = heldCounts
                let timeline = phases.joined(separator: "; ")
                try await withPostgres(database, logger: TestDatabase.logger) { client in
                    let fsync = try await client.scalar("SHOW fsync", as: String.self)
                    let commit = try await client.scalar("SHOW synchronous_commit", as: String.self)
                    let rows = try await Self.replyRows(client)
                    let lost = answered.statuses.keys.filter { rows[$0] == nil }.count
                    let doubled = rows.values.filter { $0 > 1 }.count
                    print("fault suite [replies, postgres killed twice, fsync \(fsync ?? "?"), synchronous_commit \(commit ?? "?")]: "
                          + "\(replies.count) sent, \(answered.statuses.count) answered 2xx "
                          + "(\(answered.statuses.values.filter { $0 == 202 }.count) stored, "
                          + "\(answered.statuses.values.filter { $0 == 200 }.count) duplicate), "
                          + "\(answered.retries) retries, \(held.map(String.init).joined(separator: " and ")) held through the outages, "
                          + "\(rows.count) rows, \(lost) lost, \(doubled) doubled; \(timeline)")
                    if durable {
                        #expect(fsync == "on" && commit == "on", "the scenario's PostgreSQL runs at its default durability")
                    }
                    #expect(answered.statuses.count == replies.count)
                    #expect(lost == 0)
                    #expect(doubled == 0)
                    #expect(rows.count == replies.count)
                    // The kills landed while replies were coming: some were refused (503) or cut off
                    // and sent again, or, sent while the database was down, answered once it was back.
                    #expect(answered.retries > 0 || held.allSatisfy { $0 > 0 }, "retries \(answered.retries), held \(held)")
                    #expect(held.count == 2)
                }
            } catch {
                print("herald serve's log, last lines:\n\(dir.children.filter { $0.name == "serve" }.map { $0.tail(30) }.joined(separator: "\n--\n"))")
                await cluster.wipe()
                throw error
            }
            await cluster.wipe()
        }
    }
}
