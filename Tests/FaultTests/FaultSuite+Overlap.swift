import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Overlapping campaigns (DESIGN point 16) under kill -9: several due
/// campaigns sending at once in each `herald run` share the run's limits,
/// so each kill leaves at most one session's bound unrecorded over all of
/// them together (measured at every kill), not one bound per campaign.
extension FaultSuite {
    @Test func overlappingCampaignsKilledLoseNothingAndRepeatWithinOneBound() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 4_000
                let concurrency = 100
                let kinds = [("Overlap poster", "poster", "o-poster"), ("Overlap sale", "flash_sale", "o-sale"),
                             ("Overlap feedback", "feedback", "o-feedback")]
                try await client.exec(Fixtures.catalogue)
                try await client.exec(Fixtures.audience(count: devices))
                var campaigns: [(id: Int64, collapseID: String)] = []
                for (name, kind, collapseID) in kinds {
                    try await client.exec(Fixtures.campaign(name: name, kind: kind))
                    try await client.exec("UPDATE campaigns SET collapse_id = '\(collapseID)' WHERE name = '\(name)'")
                    campaigns.append((try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = '\(name)'", as: Int64.self)),
                                      collapseID))
                }
                let sim = try SimulatorProcess(directory: dir, faults: ["--fail-503", "0.05", "--latency-ms", "25"])
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "\(concurrency)", "HERALD_BATCH_SIZE": "200", "HERALD_CAMPAIGNS_AT_ONCE": "3",
                ])
                func allCompleted() async throws -> Bool {
                    try await Self.count(client, "SELECT count(*) FROM campaigns WHERE status <> 'completed'") == 0
                }
                var runs = 0
                var kills = 0
                var perKill: [Int] = []
                let bound = Self.repeatBound(concurrency: concurrency)
                let clock = ContinuousClock()
                let end = clock.now + .seconds(120)
                while kills < 3, clock.now < end, try await !allCompleted() {
                    runs += 1
                    let worker = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                    // This run sending all three at once: it recorded outcomes of each, and none is done.
                    var run: Int64?
                    try await waitUntil("the three campaigns sent at once by this run", limit: .seconds(60)) {
                        run = try await Self.runID(client, pid: worker.pid)
                        guard let run else { return !worker.isRunning }
                        return try await Self.count(client, """
                            SELECT count(DISTINCT campaign_id) FROM delivery_status WHERE status = 'sent' AND claimed_by = \(run)
                            """) == 3 || !worker.isRunning
                    }
                    try await Task.sleep(for: .milliseconds(Int64.random(in: 300...900)))
                    worker.signal(SIGKILL)
                    guard try await worker.wait(limit: .seconds(10)) == 128 + SIGKILL, let run else { continue }
                    kills += 1
                    // What this kill left accepted and unrecorded, over the three campaigns together.
                    try await sim.settledLog()
                    let accepted = try sim.accepted()
                    var unrecorded = 0
                    for (id, collapseID) in campaigns {
                        let tokens = Set(accepted.filter { $0.collapseID == collapseID }.map(\.token))
                        unrecorded += try await Self.acceptedNotRecorded(client, tokens: tokens, campaign: id, heldBy: run).count
                    }
                    perKill.append(unrecorded)
                    #expect(unrecorded <= bound, "kill \(kills): \(unrecorded) accepted and not recorded over the three campaigns; one session's bound is \(bound)")
                }
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await sim.stop()

                let accepted = try sim.accepted()
                var repeated = 0
                for (id, collapseID) in campaigns {
                    var f = try await compare("overlap \(collapseID)", client: client,
                                              accepted: accepted.filter { $0.collapseID == collapseID },
                                              campaign: id, collapseID: collapseID)
                    f.runs = runs
                    f.kills = kills
                    print(f)
                    #expect(f.targeted == devices && f.delivered == devices && f.lost == 0 && f.failed == 0 && f.leftover == 0)
                    #expect(f.sentInLedger == f.delivered)
                    #expect(f.repeatsWithOtherAPNsID == 0 && f.ledgerAPNsIDMismatch == 0)
                    repeated += f.repeated
                }
                print("fault suite [overlap]: 3 campaigns at once, \(kills) kills, unrecorded per kill \(perKill), repeated \(repeated) in all; one session's bound \(bound) per kill")
                #expect(kills >= 2)
                #expect(repeated <= bound * kills, "the run's limits are shared: one bound per kill, not one per campaign")
                #expect(try await allCompleted())
            }
        }
    }
}
