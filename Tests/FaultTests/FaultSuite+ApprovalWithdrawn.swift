import Foundation
import PostgresNIO
import Testing
import TestSupport

/// A withdrawn approval stops a run that is sending the campaign, proven
/// with real processes: `herald run` (as a member of `herald_job`) against
/// the APNs simulator, whose own log says what went out after the
/// withdrawal. A run claims its next batch as it starts sending one; the
/// claim that finds the approval gone stops the batch under way too. So
/// what goes out after the withdrawal is at most the rest of one batch and
/// the sends under way while that claim ran (the window, HERALD_CONCURRENCY).
extension FaultSuite {
    @Test func aWithdrawnApprovalStopsTheRunAtItsNextBatch() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 3000, batch = 100, concurrency = 10
                let campaign = try await Self.campaign(client, devices: devices, name: "Withdrawn", collapseID: "withdrawn")
                try await client.exec("UPDATE settings SET require_approval = true")
                try await client.approveAsAnotherPerson(campaign)
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "20"])
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_BATCH_SIZE": "\(batch)", "HERALD_CONCURRENCY": "\(concurrency)",
                ])
                let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("300 notifications accepted", limit: .seconds(120)) { sim.acceptedCount() >= 300 }
                // The author withdraws it (as docs/marketers.md shows). The simulator's log says when
                // each notification was accepted (its file lags up to 200 ms behind: read it later).
                // "After" counts from the withdrawal's commit: what was accepted while the statement
                // ran was claimed before it (counted from before the call, a loaded machine saw 111).
                try await client.exec("SELECT herald_withdraw_approval(\(campaign), 'legal wants another look')")
                let withdrawnAt = Int64(Date().timeIntervalSince1970 * 1000)
                let code = try await worker.wait(limit: .seconds(120))
                let exitedAt = Int64(Date().timeIntervalSince1970 * 1000)
                try await sim.settledLog()
                let firstRun = try Self.acceptedAt(sim.logPath).map(\.at).filter { $0 <= exitedAt }
                let before = firstRun.filter { $0 < withdrawnAt }.count
                let after = firstRun.count - before
                print("approval withdrawn after \(before) of \(devices) accepted; \(after) more went out "
                      + "(batch \(batch), window \(concurrency)); herald run exited \(code)")
                #expect(code == 0, "\(worker.tail())")
                #expect(after <= batch + concurrency, "\(after) notifications went out after the withdrawal")
                #expect(firstRun.count < devices)
                let queued = try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign) AND status = 'queued'")
                #expect(queued == devices - firstRun.count)

                // Approved again, the next run sends the rest, each device once.
                try await client.approveAsAnotherPerson(campaign)
                var runs = 0
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await sim.stop()
                let accepted = try sim.accepted()
                #expect(accepted.count == devices)
                #expect(Set(accepted.map(\.token)).count == devices)
                #expect(try await Self.status(client, campaign) == "completed")
            }
        }
    }
}
