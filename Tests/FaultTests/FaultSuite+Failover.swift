import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

// MARK: A failover to a promoted standby

extension FaultSuite {
    /// A real failover, as an operator's cluster does it: a primary at default durability with a
    /// synchronous streaming standby (`pg_basebackup`), a `herald run` sending a campaign and a
    /// `herald serve` taking replies, both given the two servers as one multi-host URL with
    /// `target_session_attrs=read-write`. The primary is killed (SIGKILL) mid-run and the
    /// standby promoted a second later. The campaign completes on the new primary: nothing
    /// lost, nothing failed, what came twice within one repeat bound; every reply answered 2xx
    /// is on the new primary, none twice.
    @Test func aPromotedStandbyFinishesTheRunAndKeepsEveryAcknowledgedReply() async throws {
        try await withScratch { dir in
            let primary = try await DedicatedCluster.start(in: dir, durable: true)
            var standby: DedicatedCluster?
            do {
                let first = try DatabaseConfiguration(url: primary.url, maxConnections: 4)
                let replyDB = first.with(database: "replies")
                _ = try await withPostgres(first, logger: TestDatabase.logger) { client in
                    try await client.query("CREATE DATABASE replies", logger: TestDatabase.logger)
                }
                let devices = 4000
                let concurrency = 20
                let campaign = try await withMigrated(first) { client in
                    return try await Self.campaign(client, devices: devices, name: "Failover", collapseID: "failover")
                }
                let replyCount = 600
                let deliveries = try await withMigrated(replyDB) { client in
                    return try await sentDeliveries(client, devices: replyCount)
                }

                let copy = try await DedicatedCluster.standby(of: primary, in: dir)
                standby = copy
                try await primary.waitForSynchronousStandby()
                var both = first
                both.endpoints += try DatabaseConfiguration(url: copy.url).endpoints
                both.targetSession = .readWrite

                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "20"])
                try await sim.start()
                let env = try await workerEnvironment(database: both, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "\(concurrency)", "HERALD_DB_OUTAGE_SECONDS": "90",
                ])
                let secret = replySecret()
                let replies = try Self.pendingReplies(deliveries, secret: secret)
                let server = try await Self.startIntake(database: both.with(database: "replies"), secret: secret, dir: dir)
                let ledger = ReplyLedger()

                var runs = 1
                let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("800 notifications", limit: .seconds(90)) { sim.acceptedCount() >= 800 }
                // About 120 replies a second, so that they go on through the failover.
                let senders = Self.sendAll(replies, server: server, ledger: ledger, spacing: .milliseconds(100))
                try await waitUntil("150 replies", limit: .seconds(90)) { await ledger.answered >= 150 }
                let clock = ContinuousClock()
                let killedAt = (notifications: sim.acceptedCount(), replies: await ledger.answered)
                let killed = clock.now
                try await primary.crash()
                try await Task.sleep(for: .seconds(1))
                try await copy.promote()
                let promoted = clock.now
                let atPromotion = await ledger.answered
                try await waitUntil("a reply answered after the promotion", limit: .seconds(120)) {
                    await ledger.answered > atPromotion
                }
                let repliesAgain = clock.now - killed
                // A reply batch in flight on the killed primary fails when the intake moves to the
                // promoted standby (Database.failingOnServerChange), not at its deadline a minute on.
                #expect(repliesAgain < .seconds(15), "replies were stored again \(Self.seconds(repliesAgain)) s after the kill")
                if repliesAgain > .seconds(15) {
                    // A failover of a few seconds kept the intake from the database for a minute in some runs: what it logged.
                    print("fault suite [failover]: replies were stored again only \(Self.seconds(repliesAgain)) s after the kill; "
                          + "the logs:\n\(dir.children.map { "[\($0.name)]\n\($0.tail(80))" }.joined(separator: "\n--\n"))")
                }
                let code = try await worker.wait(limit: .seconds(240))
                #expect(code == 0 || code == 75, "herald run exited \(code)\n\(worker.crashReport())")
                if code != 0 { try await Self.runToCompletion(env: env, dir: dir, runs: &runs) }
                try await senders.value
                try await server.stop()
                try await sim.stop()

                let accepted = try sim.accepted()
                let answered = await ledger.snapshot()
                let allRuns = runs
                let newPrimary = try DatabaseConfiguration(url: copy.url, maxConnections: 4)
                try await withPostgres(newPrimary, logger: TestDatabase.logger) { client in
                    let recovery = try await client.scalar("SELECT pg_is_in_recovery()", as: Bool.self)
                    #expect(recovery == false, "the standby was promoted")
                    var f = try await compare("failover", client: client, accepted: accepted, campaign: campaign,
                                              collapseID: "failover")
                    f.runs = allRuns
                    print(f)
                    print("fault suite [failover]: primary killed at \(killedAt.notifications) notifications and \(killedAt.replies) replies, "
                          + "standby promoted \(Self.seconds(promoted - killed)) s later, replies stored again "
                          + "\(Self.seconds(repliesAgain)) s after the kill; runs \(allRuns)")
                    #expect(killedAt.notifications < devices)
                    try await Self.expectEachDeviceOnce(f, devices: devices, concurrency: concurrency, client: client,
                                                        campaign: campaign)
                    // A synchronous standby has every commit the run was told of, and the run holds
                    // what it could not write through the outage (HERALD_DB_OUTAGE_SECONDS): nothing
                    // APNs accepted goes unrecorded, so nothing is sent twice.
                    #expect(f.repeated == 0, "a failover within the run's database budget repeats none")
                }
                try await withPostgres(newPrimary.with(database: "replies"), logger: TestDatabase.logger) { client in
                    let rows = try await Self.replyRows(client)
                    let lost = answered.statuses.keys.filter { rows[$0] == nil }.count
                    let doubled = rows.values.filter { $0 > 1 }.count
                    print("fault suite [failover, replies]: \(replies.count) sent, \(answered.statuses.count) answered 2xx, "
                          + "\(answered.retries) retries, \(rows.count) rows, \(lost) lost, \(doubled) doubled")
                    #expect(answered.statuses.count == replies.count)
                    #expect(lost == 0)
                    #expect(doubled == 0)
                    #expect(rows.count == replies.count)
                }
            } catch {
                print("herald's logs, last lines:\n\(dir.children.map { "[\($0.name)]\n\($0.tail(30))" }.joined(separator: "\n--\n"))")
                await standby?.wipe()
                await primary.wipe()
                throw error
            }
            await standby?.wipe()
            await primary.wipe()
        }
    }
}

extension FaultSuite.DedicatedCluster {
    /// A streaming standby of `primary` (scripts/pg standby: `pg_basebackup`), at default durability.
    static func standby(of primary: Self, in dir: Scratch) async throws -> Self {
        let pgDir = dir.appendingPathComponent("pg-standby")
        let port = try DatabaseConfiguration(url: primary.url).port
        let (code, output) = try await FaultSuite.shell(["scripts/pg", "standby", "\(port)"], env: ["HERALD_PG_DIR": pgDir.path])
        guard code == 0, let url = output.split(separator: "\n").last(where: { $0.hasPrefix("postgres://") }) else {
            throw Timeout(what: "scripts/pg standby: \(output)")
        }
        return Self(directory: pgDir, url: String(url))
    }

    /// Commits wait for the standby from now on (`synchronous_standby_names`): what the primary
    /// acknowledged is on the standby when it dies.
    func waitForSynchronousStandby() async throws {
        try await withPostgres(try DatabaseConfiguration(url: url, maxConnections: 1), logger: TestDatabase.logger) { client in
            try await client.query("ALTER SYSTEM SET synchronous_standby_names = 'herald_standby'", logger: TestDatabase.logger)
            try await client.query("SELECT pg_reload_conf()", logger: TestDatabase.logger)
            try await waitUntil("the standby streaming synchronously", limit: .seconds(60)) {
                try await client.scalar(
                    "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'herald_standby' AND sync_state = 'sync'",
                    as: Int64.self) == 1
            }
        }
    }

    /// The postmaster killed with SIGKILL, as a machine that dies: its backends end with it.
    func crash() async throws {
        let pidFile = directory.appendingPathComponent("data/postmaster.pid")
        let text = try String(contentsOf: pidFile, encoding: .utf8)
        guard let pid = text.split(separator: "\n").first.flatMap({ Int32($0) }) else {
            throw Timeout(what: "no postmaster pid in \(pidFile.path)")
        }
        Glibc.kill(pid, SIGKILL)
        try await waitUntil("the primary's postmaster gone", limit: .seconds(30)) { Glibc.kill(pid, 0) != 0 }
    }

    /// scripts/pg promote: the standby takes writes.
    func promote() async throws {
        let (code, output) = try await FaultSuite.shell(["scripts/pg", "promote"], env: ["HERALD_PG_DIR": directory.path])
        guard code == 0 else { throw Timeout(what: "scripts/pg promote: \(output)") }
    }
}
