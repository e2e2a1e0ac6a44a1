import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The faults every source of the sending engine shares: a database killed
/// as in a crash, a stop whose grace runs out, and config refresh pushes
/// through an APNs outage and a database restart.
extension FaultSuite {
    // MARK: PostgreSQL killed

    @Test func postgresKilledMidRunAtDefaultDurabilityLosesNothing() async throws {
        try await Self.databaseFault("postgres killed", collapseID: "crash", durable: true) { try await $0.kill(down: .seconds(2)) }
            check: { client in
                let fsync = try await client.scalar("SHOW fsync", as: String.self)
                let commit = try await client.scalar("SHOW synchronous_commit", as: String.self)
                #expect(fsync == "on" && commit == "on", "the scenario's PostgreSQL runs at its default durability")
            }
    }

    // MARK: SIGTERM whose grace runs out

    @Test func aStopWhoseGraceRunsOutExits75AndRepeatsWithinTheBound() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 400
                let concurrency = 50
                let campaign = try await Self.campaign(client, devices: devices, name: "Slow", collapseID: "slow")
                // Every answer takes 2 s: a 1 s grace cannot see them all through.
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "2000"])
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "\(concurrency)", "HERALD_STOP_GRACE_SECONDS": "1",
                ])
                var runs = 1
                let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("a full window in flight", limit: .seconds(90)) {
                    try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE status = 'in_flight'") >= concurrency
                }
                try await Task.sleep(for: .milliseconds(500))
                let clock = ContinuousClock()
                let asked = clock.now
                worker.signal(SIGTERM)
                let code = try await worker.wait(limit: .seconds(30))
                let took = clock.now - asked
                #expect(code == 75, "herald run exited \(code)\n\(worker.tail())")
                #expect(worker.text().contains("grace period over"))
                #expect(took < .seconds(8), "the grace (1 s) plus recording: \(took)")
                #expect(try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE status = 'in_flight'") == 0)
                #expect(try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE status = 'failed'") == 0)
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await sim.stop()

                var f = try await compare("grace over", client: client, simulator: sim, campaign: campaign, collapseID: "slow")
                f.runs = runs
                f.kills = 1
                print(f)
                #expect(f.lost == 0)
                #expect(f.failed == 0)
                #expect(f.delivered == devices)
                #expect(f.sentInLedger == devices)
                // Only what was in flight when the grace ran out can come twice.
                #expect(f.repeated <= concurrency)
                #expect(f.repeatsWithOtherAPNsID == 0)
                #expect(try await Self.status(client, campaign) == "completed")
            }
        }
    }

    // MARK: Config refresh pushes

    @Test func refreshPushesWaitOutAnAPNsOutageAndADatabaseRestart() async throws {
        try await withScratch { dir in
            let cluster = try await DedicatedCluster.start(in: dir)
            do {
                let database = try DatabaseConfiguration(url: cluster.url, maxConnections: 4)
                let devices = 3000
                try await withMigrated(database) { client in
                    try await client.exec(Fixtures.catalogue)
                    try await client.exec(Fixtures.audience(count: devices))
                    // A flash sale in 30 minutes: no device has reported a config, every one needs a refresh first.
                    try await client.exec(Fixtures.campaign(name: "Sale", kind: "flash_sale"))
                    try await client.exec("""
                        UPDATE campaigns SET send_at = now() + interval '30 minutes', expires_at = now() + interval '3 hours'
                        """)
                }
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "40"])
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "20", "HERALD_OUTAGE_BUDGET_SECONDS": "6", "HERALD_DB_OUTAGE_SECONDS": "60",
                ])
                try await sim.stop()

                // APNs unreachable: the pushes wait, none fails, the run says work is left.
                let down = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                let downCode = try await down.wait(limit: .seconds(120))
                #expect(downCode == 75, "herald run exited \(downCode)\n\(down.tail())")
                try await withPostgres(database, logger: TestDatabase.logger) { client in
                    #expect(try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE kind = 'config_refresh'") == devices)
                    let notQueued = try await Self.count(client, """
                        SELECT count(*) FROM delivery_status WHERE kind = 'config_refresh' AND status <> 'queued'
                        """)
                    #expect(notQueued == 0, "none failed, none left in flight")
                }

                // APNs back; the database restarts while they go out.
                try await sim.start()
                var runs = 1
                let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("the first 500 refresh pushes", limit: .seconds(120)) { sim.acceptedCount() >= 500 }
                try await cluster.restart()
                let restartedAt = sim.acceptedCount()
                var code = try await worker.wait(limit: .seconds(180))
                #expect(code == 0 || code == 75, "herald run exited \(code)\n\(worker.tail())")
                while code == 75, runs < 4 {
                    // The retries' backoff may outlast one run: the next one sends them.
                    try await Task.sleep(for: .seconds(2))
                    runs += 1
                    let next = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                    code = try await next.wait(limit: .seconds(180))
                }
                #expect(code == 0)
                try await sim.stop()
                let accepted = try sim.accepted().filter { $0.collapseID == "herald-config" }
                let allRuns = runs + 1
                try await withPostgres(database, logger: TestDatabase.logger) { client in
                    var tokens: Set<String> = []
                    let rows = try await client.query("""
                        SELECT dv.token FROM delivery_status d JOIN devices dv ON dv.id = d.device_id
                        WHERE d.kind = 'config_refresh' AND d.status = 'sent'
                        """, logger: TestDatabase.logger)
                    for try await token in rows.decode(String.self) { tokens.insert(token) }
                    let delivered = Set(accepted.map(\.token))
                    print("fault suite [refresh through outages]: runs \(allRuns), pushes \(devices), delivered \(delivered.count), repeated \(accepted.count - delivered.count), restarted at \(restartedAt)")
                    #expect(restartedAt < devices)
                    #expect(tokens.count == devices, "every refresh push is recorded sent")
                    #expect(delivered == tokens, "APNs accepted each one the ledger says was sent")
                    let unsent = try await Self.count(client, """
                        SELECT count(*) FROM delivery_status WHERE kind = 'config_refresh' AND status <> 'sent'
                        """)
                    #expect(unsent == 0)
                    #expect(accepted.count - delivered.count <= Self.repeatBound(concurrency: 20))
                }
            } catch {
                await cluster.wipe()
                throw error
            }
            await cluster.wipe()
        }
    }
}
