import Foundation
import PostgresNIO
import Testing
import TestSupport

/// What an operator runs: `herald run` as an unprivileged user (the image's
/// uid 10001, a systemd `User=`), which may not set socket options only root
/// may set. The suite runs as root in CI; this scenario drops to a plain uid.
extension FaultSuite {
    static let runsAsRoot = getuid() == 0 && FileManager.default.isExecutableFile(atPath: Child.setpriv)

    @Test(.enabled(if: runsAsRoot, "needs root to drop to another uid"))
    func aRunAsAnUnprivilegedUserSendsEverything() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 300
                let campaign = try await Self.campaign(client, devices: devices, name: "Unprivileged", collapseID: "unprivileged")
                let sim = try SimulatorProcess(directory: dir)
                try await sim.start()
                let user: (uid: UInt32, gid: UInt32) = (10001, 10001)
                // The run's own copy of the signing key, readable by its owner only.
                let key = dir.appendingPathComponent("run-key.p8").path
                try FileManager.default.copyItem(atPath: sim.keyPath, toPath: key)
                #expect(chown(key, user.uid, user.gid) == 0)
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "APNS_KEY_PATH": key, "HERALD_OUTAGE_BUDGET_SECONDS": "20",
                ])
                let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir, user: user)
                let code = try await worker.wait(limit: .seconds(120))
                try await sim.stop()
                #expect(code == 0, "herald run as uid \(user.uid) exited \(code)\n\(worker.tail())")
                let sent = try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign) AND status = 'sent'")
                #expect(sent == devices)
                #expect(Set(try sim.accepted().map(\.token)).count == devices)
            }
        }
    }
}
