import Foundation
import PostgresNIO
import Testing
import TestSupport

/// A withdrawn approval stops a run that is sending the campaign, proven
/// with real processes: `herald run` (as a member of `herald_job`) against
/// the APNs simulator, whose own log says what went out after the
/// withdrawal. A run claims its next batch while it sends one, so what it
/// had claimed before the withdrawal (the batch under way and the one
/// claimed ahead) may still go out, and nothing claimed after it.
extension FaultSuite {
    @Test func aWithdrawnApprovalStopsTheRunAtItsNextBatch() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 3000, batch = 100
                let campaign = try await Self.campaign(client, devices: devices, name: "Withdrawn", collapseID: "withdrawn")
                try await client.exec("UPDATE settings SET require_approval = true")
                try await client.approveAsAnotherPerson(campaign)
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "20"])
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_BATCH_SIZE": "\(batch)", "HERALD_CONCURRENCY": "10",
                ])
                let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("300 notifications accepted", limit: .seconds(120)) { sim.acceptedCount() >= 300 }
                // The author withdraws it (as docs/marketers.md shows).
                try await client.exec("SELECT herald_withdraw_approval(\(campaign), 'legal wants another look')")
                let atWithdrawal = sim.acceptedCount()
                let code = try await worker.wait(limit: .seconds(120))
                let after = sim.acceptedCount() - atWithdrawal
                print("approval withdrawn after \(atWithdrawal) of \(devices) accepted; \(after) more went out "
                      + "(batch \(batch)); herald run exited \(code)")
                #expect(code == 0, "\(worker.tail())")
                #expect(after <= 2 * batch, "\(after) notifications went out after the withdrawal")
                #expect(atWithdrawal + after < devices)
                let queued = try await Self.count(client, "SELECT count(*) FROM deliveries WHERE campaign_id = \(campaign) AND status = 'queued'")
                #expect(queued == devices - atWithdrawal - after)

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
