import Foundation
import Store
import Testing
import TestSupport

/// The exit status of a real `herald run` process says what to do (docs/operators.md, "How a run
/// behaves"): 1 when a person is needed. Here APNs refuses the provider token (the key id is not
/// the one APNs knows): the run fails the campaign with APNs' answer, leaves its deliveries
/// queued for once the key is fixed, and exits 1; fixed, the next run sends them and exits 0.
@Suite("The exit status of a herald run process", .serialized)
struct RunExitStatusTests {
    @Test func aRunWhoseProviderTokenAPNsRefusesExits1AndTheFixedRunSendsEverything() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 50
                let campaign = try await FaultSuite.campaign(client, devices: devices, name: "Refused", collapseID: "refused")
                let sim = try SimulatorProcess(directory: dir)
                try await sim.start()
                var env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret())
                let rightKey = env["APNS_KEY_ID"]
                env["APNS_KEY_ID"] = "WRONGKEY01"
                let refused = try Child(name: "refused", arguments: ["run"], environment: env, directory: dir)
                let code = try await refused.wait(limit: .seconds(120))
                #expect(code == 1, "a person is needed: herald run exited \(code)\n\(refused.tail())")
                #expect(sim.acceptedCount() == 0)
                let reason = try await client.scalar("SELECT failure_reason FROM campaigns WHERE id = \(campaign)", as: String.self) ?? ""
                #expect(reason.contains("InvalidProviderToken"), "\(reason)")
                #expect(try await FaultSuite.count(client, "SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign) AND status = 'queued'") == devices,
                        "nothing is recorded as a permanent failure: the deliveries wait, queued")

                // The key fixed and the campaign set running again, as docs/operators.md says.
                env["APNS_KEY_ID"] = rightKey
                try await client.exec("UPDATE campaigns SET status = 'running' WHERE id = \(campaign)")
                let fixed = try Child(name: "fixed", arguments: ["run"], environment: env, directory: dir)
                let again = try await fixed.wait(limit: .seconds(120))
                #expect(again == 0, "herald run exited \(again)\n\(fixed.tail())")
                try await sim.settledLog()
                #expect(sim.acceptedCount() == devices)
                try await sim.stop()
            }
        }
    }
}
