import Foundation
import Store
import Testing
import TestSupport

/// The parts every delivery scenario starts from: a database with one
/// campaign to `devices` devices, a scratch directory, the APNs simulator
/// process (started, with its faults) and the workers' environment; and the
/// runs it has started, for its figures. Used by one scenario's task at a time.
final class Scenario: @unchecked Sendable {
    let label: String
    let client: Database
    let database: DatabaseConfiguration
    let dir: Scratch
    let sim: SimulatorProcess
    let env: [String: String]
    let campaign: Int64
    let devices: Int
    let collapseID: String
    var runs = 0

    init(label: String, client: Database, database: DatabaseConfiguration, dir: Scratch, sim: SimulatorProcess,
         env: [String: String], campaign: Int64, devices: Int, collapseID: String) {
        self.label = label
        self.client = client
        self.database = database
        self.dir = dir
        self.sim = sim
        self.env = env
        self.campaign = campaign
        self.devices = devices
        self.collapseID = collapseID
    }

    /// Starts one `herald run` worker (counted among the runs).
    func worker(_ name: String = "worker") throws -> Child {
        runs += 1
        return try Child(name: name, arguments: ["run"], environment: env, directory: dir)
    }

    /// `herald run` until one exits 0 (`FaultSuite.runToCompletion`).
    func runToCompletion(limit: Int = 3) async throws {
        try await FaultSuite.runToCompletion(env: env, dir: dir, limit: limit, runs: &runs)
    }

    /// Stops the simulator and compares what it accepted with the ledger; prints the figures.
    func figures(kills: Int = 0) async throws -> Figures {
        try await sim.stop()
        var f = try await compare(label, client: client, simulator: sim, campaign: campaign, collapseID: collapseID)
        f.runs = runs
        f.kills = kills
        print(f)
        return f
    }

    func count(_ sql: String) async throws -> Int { try await FaultSuite.count(client, sql) }
    func status() async throws -> String { try await FaultSuite.status(client, campaign) }
}

extension FaultSuite {
    /// A scenario named `label` (its figures' line): a campaign `name` to
    /// `devices` devices collapsing under `collapseID`, the simulator with
    /// `faults`, workers with `extra` settings. `prepare` runs before the
    /// simulator starts.
    static func scenario(_ label: String, devices: Int, name: String, collapseID: String, faults: [String] = [],
                         extra: [String: String] = [:], prepare: @Sendable (Database, Int64) async throws -> Void = { _, _ in },
                         _ body: @Sendable (Scenario) async throws -> Void) async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let campaign = try await Self.campaign(client, devices: devices, name: name, collapseID: collapseID)
                try await prepare(client, campaign)
                let sim = try SimulatorProcess(directory: dir, faults: faults)
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: extra)
                try await body(Scenario(label: label, client: client, database: database, dir: dir, sim: sim, env: env,
                                        campaign: campaign, devices: devices, collapseID: collapseID))
            }
        }
    }
}
