import Foundation
import PostgresNIO
import Testing
import TestSupport

/// A recurring campaign (Sql/0023) with real processes: three workers see
/// the same moment due at once, one is killed mid-occurrence, and later runs
/// see it again; the occurrence is made once and each device gets it once
/// (a kill -9 may repeat within the stated bound, as for any campaign).
extension FaultSuite {
    @Test func aRecurringMomentSeenByManyWorkersIsSentOnce() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 1_500
                let concurrency = 50
                let series = try await Self.campaign(client, devices: devices, name: "Daily", collapseID: "daily")
                try await client.exec("""
                    UPDATE campaigns SET repeat_unit = 'day', send_at = now() - interval '1 hour' WHERE id = \(series)
                    """)
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "20"])
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "\(concurrency)", "APNS_MAX_ATTEMPTS": "1", "APNS_TIMEOUT_SECONDS": "2",
                    "HERALD_LEASE_SECONDS": "22",
                ])
                let workers = try ["a", "b", "c"].map {
                    try Child(name: "worker-\($0)", arguments: ["run"], environment: env, directory: dir)
                }
                try await waitUntil("a fifth sent", limit: .seconds(60)) { sim.acceptedCount() >= devices / 5 }
                workers[0].signal(SIGKILL)
                _ = try await workers[0].wait(limit: .seconds(10))
                for worker in workers.dropFirst() {
                    let code = try await worker.wait(limit: .seconds(120))
                    #expect(code == 0, "\(worker.name) exited \(code)\n\(worker.tail())")
                }
                // Runs after: the killed worker's rows come back (its process is
                // gone); the moment is seen again and nothing more is made.
                var runs = 0
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await sim.stop()

                let occurrences = try await Self.count(client, "SELECT count(*) FROM campaigns WHERE series_id = \(series)")
                let occurrence = try #require(try await client.scalar(
                    "SELECT id FROM campaigns WHERE series_id = \(series)", as: Int64.self))
                let sent = try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE campaign_id = \(occurrence) AND status = 'sent'")
                let accepted = try sim.accepted().map(\.token)
                let repeated = accepted.count - Set(accepted).count
                print("fault suite [recurring]: 3 workers and a kill on one moment: occurrences \(occurrences), sent \(sent) of \(devices), accepted \(accepted.count), repeated \(repeated) (bound \(Self.repeatBound(concurrency: concurrency)))")
                #expect(occurrences == 1)
                #expect(sent == devices && Set(accepted).count == devices)
                #expect(repeated <= Self.repeatBound(concurrency: concurrency))
                #expect(try await Self.status(client, occurrence) == "completed")
            }
        }
    }
}
