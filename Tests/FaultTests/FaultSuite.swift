import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The delivery promise under real faults: real `herald run` processes
/// killed, stopped and restarted, a real APNs simulator process stopped and
/// restarted, a real PostgreSQL restarted. Each scenario compares what the
/// simulator accepted with the ledger and prints its figures.
@Suite("Delivery under real faults", .serialized)
struct FaultSuite {
    /// HERALD_CONCURRENCY + HERALD_RECORD_EVERY as the workers run them: the
    /// most notifications a kill -9 can make the next run send again.
    static func repeatBound(concurrency: Int, recordEvery: Int = FaultSuite.recordEvery) -> Int { concurrency + recordEvery }
    /// HERALD_RECORD_EVERY of every worker the suite starts.
    static let recordEvery = 100

    static func campaign(_ client: Database, devices: Int, name: String, collapseID: String) async throws -> Int64 {
        try await client.exec(Fixtures.catalogue)
        try await client.exec(Fixtures.audience(count: devices))
        try await client.exec(Fixtures.campaign(name: name))
        try await client.exec("UPDATE campaigns SET collapse_id = '\(collapseID)' WHERE name = '\(name)'")
        return try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = '\(name)'", as: Int64.self))
    }

    /// The campaign completed, every device got it, nothing was lost or failed, and what came
    /// twice (in flight, or outcomes not yet committed) is within one repeat bound, each under
    /// its first `apns-id`.
    static func expectEachDeviceOnce(_ f: Figures, devices: Int, concurrency: Int, client: Database,
                                     campaign: Int64) async throws {
        #expect(f.lost == 0)
        #expect(f.failed == 0)
        #expect(f.leftover == 0)
        #expect(f.delivered == devices)
        #expect(f.sentInLedger == devices)
        #expect(f.repeated <= Self.repeatBound(concurrency: concurrency))
        #expect(f.repeatsWithOtherAPNsID == 0)
        #expect(try await Self.status(client, campaign) == "completed")
    }

    static func status(_ client: Database, _ campaign: Int64) async throws -> String {
        try await client.scalar("SELECT status FROM campaigns WHERE id = \(campaign)", as: String.self) ?? "?"
    }

    static func count(_ client: Database, _ sql: String) async throws -> Int {
        Int(try await client.scalar(sql, as: Int64.self) ?? -1)
    }

    /// Runs `herald run` until it exits 0 (at most `limit` runs); a run
    /// stopped by an outage exits 75 and the next one continues.
    static func runToCompletion(env: [String: String], dir: Scratch, limit: Int = 3, runs: inout Int) async throws {
        for _ in 0..<limit {
            runs += 1
            let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
            let code = try await worker.wait(limit: .seconds(180))
            if code == 0 { return }
            #expect(code == 75, "herald run exited \(code)\n\(worker.tail())")
            if code != 75 { return }
        }
    }

    // MARK: kill -9

    @Test func chaosKillsLoseNothingAndRepeatWithinTheBound() async throws {
        let concurrency = 100
        try await Self.scenario("chaos", devices: 20_000, name: "Chaos", collapseID: "chaos", faults: [
            "--fail-503", "0.1", "--fail-429", "0.02", "--goaway-after", "1000", "--latency-ms", "25",
        ], extra: [
            "HERALD_CONCURRENCY": "\(concurrency)", "HERALD_BATCH_SIZE": "400",
            // The audience in slices of 1,000, 3,000, 12,000 and 48,000 device
            // ids: sending starts on the first while kills land between and during slices.
            "HERALD_SNAPSHOT_SLICE": "1000",
        ]) { s in
            var kills = 0
            var workers: [Child] = [try s.worker()]
            let clock = ContinuousClock()
            let end = clock.now + .seconds(240)
            while kills < 6, clock.now < end {
                try await Task.sleep(for: .milliseconds(Int64.random(in: 700...1600)))
                if try await s.status() == "completed" { break }
                for w in workers where !w.isRunning {
                    let code = try await w.wait(limit: .seconds(5))
                    // 1 means a person is needed: no point in restarting it.
                    try #require(code == 0 || code == 75, "herald run exited \(code)\n\(w.tail())")
                }
                workers.removeAll { !$0.isRunning }
                guard let victim = workers.randomElement() else {
                    workers.append(try s.worker())
                    continue
                }
                victim.signal(SIGKILL)
                // Only a kill that landed (the worker died of it) counts towards the bound.
                if try await victim.wait(limit: .seconds(10)) == 128 + SIGKILL { kills += 1 }
                workers.removeAll { $0 === victim }
                workers.append(try s.worker())
                // Two workers in parallel from the second kill on.
                if kills == 2 { workers.append(try s.worker()) }
            }
            for w in workers {
                let code = try await w.wait(limit: .seconds(180))
                #expect(code == 0 || code == 75, "herald run exited \(code)\n\(w.tail())")
            }
            if try await s.status() != "completed" { try await s.runToCompletion() }
            let f = try await s.figures(kills: kills)
            print("fault suite [chaos]: repeat bound \(Self.repeatBound(concurrency: concurrency)) per kill")
            #expect(kills >= 5)
            #expect(f.targeted == s.devices)
            #expect(f.lost == 0)
            #expect(f.failed == 0)
            #expect(f.leftover == 0)
            #expect(f.delivered == s.devices)
            #expect(f.sentInLedger == f.delivered)
            #expect(f.repeated <= Self.repeatBound(concurrency: concurrency) * kills)
            #expect(f.repeatsWithOtherCollapseID == 0)
            #expect(f.repeatsWithOtherAPNsID == 0)
            #expect(f.ledgerAPNsIDMismatch == 0)
            #expect(try await s.status() == "completed")
            #expect(try await s.count("SELECT count(*) FROM runs WHERE status = 'running'") == 0)
        }
    }

    // MARK: APNs outage

    @Test func apnsDownForTenSecondsFailsNothing() async throws {
        try await Self.scenario("apns down 10 s", devices: 4000, name: "Outage", collapseID: "outage", faults: ["--latency-ms", "20"],
                                extra: ["HERALD_CONCURRENCY": "20", "HERALD_OUTAGE_BUDGET_SECONDS": "90"]) { s in
            let worker = try s.worker()
            try await waitUntil("the first 800 notifications", limit: .seconds(90)) { s.sim.acceptedCount() >= 800 }
            try await s.sim.stop()
            let downAt = s.sim.acceptedCount()
            try await Task.sleep(for: .seconds(10))
            // While APNs is away nothing is failed.
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'failed'") == 0)
            try await s.sim.start()
            let code = try await worker.wait(limit: .seconds(180))
            #expect(code == 0 || code == 75, "herald run exited \(code)\n\(worker.tail())")
            if code != 0 { try await s.runToCompletion() }
            let f = try await s.figures()
            #expect(downAt < s.devices)
            // Only what was in flight when APNs went away can come twice.
            #expect(f.repeated <= 20)
            try await Self.expectEachDeviceOnce(f, devices: s.devices, concurrency: 20, client: s.client, campaign: s.campaign)
        }
    }

    // MARK: SIGTERM

    @Test func sigtermStopsWithinTheGracePeriodAndTheNextRunRepeatsNothing() async throws {
        try await Self.scenario("sigterm", devices: 4000, name: "Term", collapseID: "term", faults: ["--latency-ms", "20"],
                                extra: ["HERALD_CONCURRENCY": "20", "HERALD_STOP_GRACE_SECONDS": "5"]) { s in
            let worker = try s.worker()
            try await waitUntil("the first 800 notifications", limit: .seconds(90)) { s.sim.acceptedCount() >= 800 }
            worker.signal(SIGTERM)
            // The grace period (5 s) plus the time to record and print.
            let code = try await worker.wait(limit: .seconds(20))
            #expect(code == 75, "herald run exited \(code)\n\(worker.tail())")
            #expect(worker.text().contains("STOPPED by a signal"))
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'in_flight'") == 0)
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'queued'") > 0)
            #expect(try await s.client.scalar("SELECT status FROM runs ORDER BY id LIMIT 1", as: String.self) == "stopped")
            try await s.runToCompletion()
            let f = try await s.figures()
            #expect(f.repeated == 0)
            try await Self.expectEachDeviceOnce(f, devices: s.devices, concurrency: 20, client: s.client, campaign: s.campaign)
        }
    }

    // MARK: Operators

    @Test func pauseMidRunThenResume() async throws {
        try await Self.scenario("pause mid-run, resume", devices: 4000, name: "Paused", collapseID: "paused",
                                faults: ["--latency-ms", "20"], extra: ["HERALD_CONCURRENCY": "20"]) { s in
            let worker = try s.worker()
            try await waitUntil("the first 800 notifications", limit: .seconds(90)) { s.sim.acceptedCount() >= 800 }
            try await s.client.exec("UPDATE campaigns SET status = 'paused' WHERE id = \(s.campaign)")
            let code = try await worker.wait(limit: .seconds(60))
            #expect(code == 0, "herald run exited \(code)\n\(worker.tail())")
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'in_flight'") == 0)
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'queued'") > 0)
            #expect(try await s.status() == "paused")

            // Resume: the one documented value.
            try await s.client.exec("UPDATE campaigns SET status = 'running' WHERE id = \(s.campaign)")
            try await s.runToCompletion()
            let f = try await s.figures()
            #expect(f.repeated == 0)
            try await Self.expectEachDeviceOnce(f, devices: s.devices, concurrency: 20, client: s.client, campaign: s.campaign)
            // Every change is in the audit, with who made it.
            var changes: [String] = []
            for try await (from, to, by) in try await s.client.query("""
                SELECT coalesce(from_status, '-'), to_status, changed_by FROM analyst.campaign_status_changes
                WHERE campaign_id = \(s.campaign) ORDER BY changed_at, to_status
                """, logger: TestDatabase.logger).decode((String, String, String).self) {
                changes.append("\(from)>\(to)")
                #expect(!by.isEmpty)
            }
            #expect(changes == ["->scheduled", "scheduled>running", "running>paused", "paused>running", "running>completed"])
        }
    }

    @Test func pauseBeforeTheFirstSnapshotThenResume() async throws {
        try await Self.scenario("pause before snapshot, resume", devices: 500, name: "Early", collapseID: "early",
                                prepare: { client, campaign in
                                    try await client.exec("UPDATE campaigns SET status = 'paused' WHERE id = \(campaign)")
                                }) { s in
            try await s.runToCompletion()
            #expect(try await s.count("SELECT count(*) FROM delivery_status") == 0)
            #expect(try await s.status() == "paused")
            try await s.client.exec("UPDATE campaigns SET status = 'running' WHERE id = \(s.campaign)")
            try await s.runToCompletion()
            let f = try await s.figures()
            #expect(f.targeted == s.devices)
            #expect(f.repeated == 0)
            try await Self.expectEachDeviceOnce(f, devices: s.devices, concurrency: 0, client: s.client, campaign: s.campaign)
        }
    }

    @Test func cancelBetweenRunsLeavesNothingQueued() async throws {
        try await Self.scenario("cancel between runs", devices: 3000, name: "Dropped", collapseID: "dropped",
                                faults: ["--latency-ms", "20"], extra: ["HERALD_CONCURRENCY": "20"]) { s in
            let worker = try s.worker()
            try await waitUntil("the first 500 notifications", limit: .seconds(90)) { s.sim.acceptedCount() >= 500 }
            try await s.client.exec("UPDATE campaigns SET status = 'paused' WHERE id = \(s.campaign)")
            #expect(try await worker.wait(limit: .seconds(60)) == 0, "\(worker.tail())")
            // No run is on it now: cancel.
            try await s.client.exec("UPDATE campaigns SET status = 'cancelled' WHERE id = \(s.campaign)")
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status IN ('queued', 'in_flight')") == 0)
            let cancelled = try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'cancelled'")
            #expect(cancelled > 0)
            #expect(try await s.count("""
                SELECT queued + in_flight FROM analyst.campaign_funnel WHERE campaign_id = \(s.campaign)
                """) == 0)
            // What the ledger says went out before the cancel (the simulator's log is flushed later).
            let before = try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'sent'")
            try await s.runToCompletion()
            let f = try await s.figures()
            #expect(f.delivered == before)
            #expect(f.sentInLedger == f.delivered)
            #expect(f.delivered + cancelled == s.devices)
            #expect(f.repeated == 0)
            #expect(try await s.status() == "cancelled")
        }
    }
}

// MARK: PostgreSQL restart

extension FaultSuite {
    /// A PostgreSQL cluster of this scenario's own (never the shared test
    /// server), started with scripts/pg under HERALD_PG_DIR.
    struct DedicatedCluster {
        let directory: URL
        let url: String

        /// `durable`: PostgreSQL's default durability (fsync, synchronous_commit), as in production.
        static func start(in dir: Scratch, durable: Bool = false) async throws -> DedicatedCluster {
            let pgDir = dir.appendingPathComponent("pg")
            let (code, output) = try await shell(["scripts/pg", "start"],
                                                 env: ["HERALD_PG_DIR": pgDir.path, "HERALD_PG_DURABLE": durable ? "1" : "0"])
            guard code == 0, let url = output.split(separator: "\n").last(where: { $0.hasPrefix("postgres://") }) else {
                throw Timeout(what: "scripts/pg start: \(output)")
            }
            return DedicatedCluster(directory: pgDir, url: String(url))
        }

        func restart() async throws {
            try await pgCtl(["restart", "-m", "fast", "-w", "-t", "60"])
        }

        /// `pg_ctl stop -m immediate` (the server dies without a checkpoint,
        /// as in a crash), then a start after `down`: recovery replays the WAL.
        func kill(down: Duration) async throws {
            try await pgCtl(["stop", "-m", "immediate", "-w", "-t", "60"])
            try await Task.sleep(for: down)
            // The server's own options were recorded at its first start (postmaster.opts).
            try await pgCtl(["start", "-w", "-t", "60", "-l", directory.appendingPathComponent("server.log").path,
                             "-o", Self.options(of: directory)])
        }

        private static func options(of directory: URL) -> String {
            let opts = (try? String(contentsOf: directory.appendingPathComponent("data/postmaster.opts"), encoding: .utf8)) ?? ""
            // "…/postgres" "-D" "…" "-c" "listen_addresses=…" …: every argument after the data directory.
            let parts = opts.split(separator: "\"").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            guard let d = parts.firstIndex(of: "-D") else { return "" }
            return parts[(d + 2)...].map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
        }

        private func pgCtl(_ arguments: [String]) async throws {
            let bins = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
            guard let version = bins.sorted().last else { throw Timeout(what: "no pg_ctl") }
            var command = ["/usr/lib/postgresql/\(version)/bin/pg_ctl", "-D", directory.appendingPathComponent("data").path]
                + arguments
            if getuid() == 0 { command = ["runuser", "-u", "postgres", "--"] + command }
            let (code, output) = try await shell(command, env: [:])
            guard code == 0 else { throw Timeout(what: "pg_ctl \(arguments.joined(separator: " ")): \(output)") }
        }

        func wipe() async {
            _ = try? await shell(["scripts/pg", "wipe"], env: ["HERALD_PG_DIR": directory.path])
        }
    }

    static func shell(_ command: [String], env extra: [String: String]) async throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        var env = ProcessInfo.processInfo.environment
        for (k, v) in extra { env[k] = v }
        process.environment = env
        process.currentDirectoryURL = HeraldBinary.repository
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("herald-shell-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let handle = try FileHandle(forWritingTo: out)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let pid = process.processIdentifier
        let clock = ContinuousClock()
        let end = clock.now + .seconds(240)
        // Reaped here: Foundation's own watch of a child that starts
        // daemons (pg_ctl) does not always see it exit.
        var code: Int32?
        while code == nil {
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            } else if reaped == -1, !process.isRunning {
                code = process.terminationStatus
            } else if clock.now > end {
                kill(pid, SIGKILL)
                throw Timeout(what: command.joined(separator: " "))
            } else {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        try? handle.close()
        let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: out)
        return (code ?? -1, text)
    }

    @Test func postgresRestartedMidRunFailsNoCampaign() async throws {
        try await Self.databaseFault("postgres restart", collapseID: "restart") { try await $0.restart() } check: { client in
            let failed = try await Self.count(client, "SELECT count(*) FROM campaigns WHERE status = 'failed'")
            #expect(failed == 0)
        }
    }

    /// A 4,000-device campaign sent by one worker against a cluster of the
    /// scenario's own, `fault` done to the database once 800 notifications
    /// are out; the runs that follow finish it. Nothing is lost, failed or
    /// left over, and what came twice is within one repeat bound.
    static func databaseFault(
        _ scenario: String, collapseID: String, durable: Bool = false, _ fault: (DedicatedCluster) async throws -> Void,
        check: @escaping @Sendable (Database) async throws -> Void
    ) async throws {
        try await withScratch { dir in
            let cluster = try await DedicatedCluster.start(in: dir, durable: durable)
            do {
                let database = try DatabaseConfiguration(url: cluster.url, maxConnections: 4)
                let devices = 4000
                let concurrency = 20
                let campaign = try await withMigrated(database) { client in
                    return try await Self.campaign(client, devices: devices, name: scenario, collapseID: collapseID)
                }
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "20"])
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "\(concurrency)", "HERALD_DB_OUTAGE_SECONDS": "60",
                ])
                var runs = 1
                let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("the first 800 notifications", limit: .seconds(90)) { sim.acceptedCount() >= 800 }
                try await fault(cluster)
                let faultAt = sim.acceptedCount()
                let code = try await worker.wait(limit: .seconds(180))
                #expect(code == 0 || code == 75, "herald run exited \(code)\n\(worker.tail())")
                if code != 0 { try await Self.runToCompletion(env: env, dir: dir, runs: &runs) }
                try await sim.stop()
                let accepted = try sim.accepted()
                let allRuns = runs
                try await withPostgres(database, logger: TestDatabase.logger) { client in
                    var f = try await compare(scenario, client: client, accepted: accepted, campaign: campaign,
                                              collapseID: collapseID)
                    f.runs = allRuns
                    print(f)
                    #expect(faultAt < devices)
                    try await Self.expectEachDeviceOnce(f, devices: devices, concurrency: concurrency, client: client,
                                                        campaign: campaign)
                    try await check(client)
                }
            } catch {
                await cluster.wipe()
                throw error
            }
            await cluster.wipe()
        }
    }
}

// MARK: A hung run

extension FaultSuite {
    /// A run frozen mid-send (SIGSTOP) keeps its leases until they expire;
    /// then another run takes its work over, and the frozen one, woken up,
    /// starts no new send and writes nothing over the new owner's outcomes.
    @Test func aFrozenRunIsTakenOverAfterItsLeaseAndStartsNoNewSendWhenItWakes() async throws {
        let concurrency = 20
        // One notification takes at most 2 × (1 s + 5 s backoff) + 10 s connect: a 30 s lease.
        try await Self.scenario("frozen run", devices: 3000, name: "Frozen", collapseID: "frozen", faults: ["--latency-ms", "20"], extra: [
            "HERALD_CONCURRENCY": "\(concurrency)", "APNS_TIMEOUT_SECONDS": "1", "APNS_MAX_ATTEMPTS": "2",
            "HERALD_LEASE_SECONDS": "30",
        ]) { s in
            let frozen = try s.worker("frozen")
            try await waitUntil("the first 500 notifications", limit: .seconds(90)) { s.sim.acceptedCount() >= 500 }
            frozen.signal(SIGSTOP)
            // Its leases are live: another run leaves its deliveries alone.
            try await s.runToCompletion()
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'in_flight'") > 0)
            #expect(try await s.status() == "running")
            // Once they expire, the next run takes them over and finishes.
            try await waitUntil("the frozen run's leases expire", limit: .seconds(60)) {
                try await s.count("""
                    SELECT count(*) FROM delivery_status d JOIN runs r ON r.id = d.claimed_by
                    WHERE d.status = 'in_flight' AND r.status = 'running' AND r.lease_expires_at > now()
                    """) == 0
            }
            try await s.runToCompletion()
            #expect(try await s.status() == "completed")
            try await s.sim.settledLog()
            let beforeWake = s.sim.acceptedCount()
            let sentBeforeWake = try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'sent'")
            frozen.signal(SIGCONT)
            let code = try await frozen.wait(limit: .seconds(60))
            #expect(code == 0 || code == 75, "the woken run exited \(code)\n\(frozen.tail())")
            try await s.sim.settledLog()
            // Woken, it starts no new send: only those it had in flight when
            // it froze may still go out, with their remaining attempts
            // (APNS_MAX_ATTEMPTS = 2), before it sees its lease lapsed.
            // And it writes nothing over the new owner's outcomes.
            let afterWake = s.sim.acceptedCount() - beforeWake
            #expect(afterWake <= concurrency * 2, "the woken run sent \(afterWake)")
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'sent'") == sentBeforeWake)
            let f = try await s.figures()
            #expect(f.lost == 0)
            #expect(f.leftover == 0)
            #expect(f.delivered == s.devices)
            #expect(f.sentInLedger == s.devices)
            print("fault suite [frozen run]: \(afterWake) sends finished after waking")
            #expect(f.repeated <= Self.repeatBound(concurrency: concurrency) + concurrency * 2)
            #expect(f.repeatsWithOtherAPNsID == 0)
        }
    }
}

// MARK: A second signal

extension FaultSuite {
    /// The second SIGTERM does not wait for APNs: the run exits at once
    /// (75), and the next run, on the same host, takes its work over.
    @Test func aSecondSignalExitsAtOnce() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 200
                let campaign = try await Self.campaign(client, devices: devices, name: "Twice", collapseID: "twice")
                // Every answer takes 8 s: a graceful stop would wait for them.
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "8000"])
                try await sim.start()
                var env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "20", "HERALD_STOP_GRACE_SECONDS": "60", "APNS_TIMEOUT_SECONDS": "20",
                    "HERALD_LEASE_SECONDS": "200",
                ])
                var runs = 1
                let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("notifications in flight", limit: .seconds(60)) {
                    try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE status = 'in_flight'") > 0
                }
                try await Task.sleep(for: .milliseconds(500))
                worker.signal(SIGTERM)
                try await Task.sleep(for: .milliseconds(300))
                worker.signal(SIGTERM)
                // Well before the 8 s answers.
                let code = try await worker.wait(limit: .seconds(5))
                #expect(code == 75, "\(worker.tail())")
                #expect(worker.text().contains("second stop signal"))
                // The next run recovers what it held (its process is gone) and finishes.
                env["HERALD_CONCURRENCY"] = "200"
                try await sim.stop()
                let fast = try SimulatorProcess(directory: dir)
                try await fast.start()
                for (k, v) in fast.environment { env[k] = v }
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await fast.stop()
                #expect(try await Self.status(client, campaign) == "completed")
                #expect(try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE status = 'sent'") == devices)
                print("fault suite [second signal]: runs \(runs), exit \(code) at once")
            }
        }
    }
}
