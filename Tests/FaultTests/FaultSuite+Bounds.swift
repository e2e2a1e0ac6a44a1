import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The repeat bound per kill: after each `kill -9`, before any run takes the
/// killed run's work over, what APNs accepted and the ledger does not show as
/// sent is at most HERALD_CONCURRENCY + HERALD_RECORD_EVERY, and every later
/// repeat is one of those.
extension FaultSuite {
    @Test func everyKillLeavesAtMostTheRepeatBoundUnrecorded() async throws {
        try await Self.killRound("bound per kill", devices: 8_000, kills: 5, concurrency: 100, recordEvery: Self.recordEvery,
                                 extra: ["HERALD_BATCH_SIZE": "400"])
    }

    /// HERALD_CONCURRENCY and HERALD_RECORD_EVERY at their defaults (200 and
    /// 1,000): the bound the README states, 1,200 per kill.
    @Test func atTheDefaultSettingsEveryKillLeavesAtMostTwelveHundredUnrecorded() async throws {
        try await Self.killRound("bound per kill, defaults", devices: 8_000, kills: 3, concurrency: nil, recordEvery: nil)
    }

    /// A chaos round (10% 503, 2% 429, GOAWAY every 1,000 streams, 25 ms
    /// latency) with `kills` kill -9s, two workers from the second kill on.
    /// At each kill the other worker is stopped (SIGSTOP) while the log is
    /// read, so that nothing takes the killed run's rows over meanwhile.
    /// `concurrency`/`recordEvery` nil: left to herald's defaults.
    static func killRound(_ scenario: String, devices: Int, kills wanted: Int, concurrency: Int?, recordEvery: Int?,
                          extra: [String: String] = [:]) async throws {
        let bound = (concurrency ?? 200) + (recordEvery ?? 1_000)
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let campaign = try await Self.campaign(client, devices: devices, name: "Bounded", collapseID: "bounded")
                let sim = try SimulatorProcess(directory: dir, faults: [
                    "--fail-503", "0.1", "--fail-429", "0.02", "--goaway-after", "1000", "--latency-ms", "25",
                ])
                try await sim.start()
                // The other workers are stopped (SIGSTOP) while the log is read after a kill, for a few
                // seconds on a loaded machine: none of their requests in flight may reach its deadline
                // meanwhile, or its retry would be a repeat that no kill caused. The lease outlasts a send.
                let settings = ["HERALD_SNAPSHOT_SLICE": "1000", "APNS_TIMEOUT_SECONDS": "20", "HERALD_LEASE_SECONDS": "240"]
                var env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(),
                                                      extra: extra.merging(settings) { a, _ in a })
                env["HERALD_CONCURRENCY"] = concurrency.map(String.init)
                env["HERALD_RECORD_EVERY"] = recordEvery.map(String.init)
                var runs = 0
                var workers: [Child] = []
                func start() throws {
                    runs += 1
                    workers.append(try Child(name: "worker", arguments: ["run"], environment: env, directory: dir))
                }
                try start()
                var perKill: [Int] = []
                var left: Set<String> = []
                let clock = ContinuousClock()
                let end = clock.now + .seconds(120)
                while perKill.count < wanted, clock.now < end {
                    try await Task.sleep(for: .milliseconds(Int64.random(in: 200...800)))
                    if try await Self.status(client, campaign) == "completed" { break }
                    for w in workers where !w.isRunning {
                        let code = try await w.wait(limit: .seconds(5))
                        try #require(code == 0 || code == 75, "herald run exited \(code)\n\(w.tail())")
                    }
                    workers.removeAll { !$0.isRunning }
                    guard let victim = workers.randomElement() else {
                        try start()
                        continue
                    }
                    let others = workers.filter { $0 !== victim }
                    // A kill is worth counting once the victim is sending: wait (a while) until it has
                    // recorded outcomes, then a moment more, so that it lands anywhere in its sending.
                    let run = try await Self.recordingRun(client, pid: victim.pid, campaign: campaign, limit: .seconds(20))
                    try await Task.sleep(for: .milliseconds(Int64.random(in: 0...400)))
                    for w in others { w.signal(SIGSTOP) }
                    victim.signal(SIGKILL)
                    let code = try await victim.wait(limit: .seconds(10))
                    // Read the log once the simulator has taken in all the victim had written.
                    try await sim.settledLog()
                    if code == 128 + SIGKILL, let run {
                        let accepted = Set(try sim.accepted().map(\.token))
                        let unrecorded = try await Self.acceptedNotRecorded(client, tokens: accepted, campaign: campaign,
                                                                            heldBy: run)
                        perKill.append(unrecorded.count)
                        left.formUnion(unrecorded)
                        #expect(unrecorded.count <= bound,
                                "kill \(perKill.count): \(unrecorded.count) accepted and not recorded; the bound is \(bound)")
                    }
                    for w in others { w.signal(SIGCONT) }
                    workers.removeAll { $0 === victim }
                    try start()
                    if perKill.count == 2, workers.count < 2 { try start() }
                }
                for w in workers {
                    let code = try await w.wait(limit: .seconds(120))
                    #expect(code == 0 || code == 75, "herald run exited \(code)\n\(w.tail())")
                }
                if try await Self.status(client, campaign) != "completed" {
                    try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                }
                try await sim.stop()

                let accepted = try sim.accepted()
                var f = try await compare(scenario, client: client, accepted: accepted, campaign: campaign, collapseID: "bounded")
                f.runs = runs
                f.kills = perKill.count
                var seen: [String: Int] = [:]
                for a in accepted { seen[a.token, default: 0] += 1 }
                let repeatedTokens = Set(seen.filter { $0.value > 1 }.keys)
                let outside = repeatedTokens.subtracting(left).count
                print("fault suite [\(scenario)]: runs \(runs), kills \(perKill.count), accepted and not recorded per kill "
                      + "\(perKill) (bound \(bound)), repeated \(f.repeated) (\(outside) not among those), "
                      + "targeted \(f.targeted), delivered \(f.delivered), lost \(f.lost), failed \(f.failed)")
                #expect(perKill.count >= wanted, "only \(perKill.count) kills landed before the campaign completed")
                #expect(perKill.allSatisfy { $0 <= bound })
                // Every repeat is one the ledger had not recorded when a run was killed.
                #expect(outside == 0)
                #expect(f.targeted == devices)
                #expect(f.lost == 0)
                #expect(f.failed == 0)
                #expect(f.leftover == 0)
                #expect(f.delivered == devices)
                #expect(f.sentInLedger == devices)
                #expect(f.repeatsWithOtherAPNsID == 0)
                #expect(f.repeatsWithOtherCollapseID == 0)
                #expect(try await Self.status(client, campaign) == "completed")
            }
        }
    }
}
