import Foundation
import PostgresNIO
import Testing
import TestSupport

/// A campaign's pace (Sql/0020) with real processes: two workers share it
/// through PostgreSQL, one is killed mid-campaign and another takes its place,
/// and the simulator's own log never shows more than the pace allows in any
/// 10-second window.
extension FaultSuite {
    @Test func twoWorkersAndAKillStayUnderTheCampaignsPace() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 480
                let perMinute = 1_200  // 200 in any 10 s window
                let campaign = try await Self.campaign(client, devices: devices, name: "Paced", collapseID: "paced")
                try await client.exec("UPDATE campaigns SET rate_per_minute = \(perMinute) WHERE id = \(campaign)")
                let sim = try SimulatorProcess(directory: dir)
                try await sim.start()
                // A short lease: the killed worker's rows come back within seconds.
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "50", "APNS_MAX_ATTEMPTS": "1", "APNS_TIMEOUT_SECONDS": "2",
                    "HERALD_LEASE_SECONDS": "22",
                ])
                let first = try Child(name: "worker-a", arguments: ["run"], environment: env, directory: dir)
                let second = try Child(name: "worker-b", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("a third sent", limit: .seconds(60)) { sim.acceptedCount() >= devices / 3 }
                first.signal(SIGKILL)
                _ = try await first.wait(limit: .seconds(10))
                let third = try Child(name: "worker-c", arguments: ["run"], environment: env, directory: dir)
                for worker in [second, third] {
                    let code = try await worker.wait(limit: .seconds(120))
                    #expect(code == 0, "\(worker.name) exited \(code)\n\(worker.tail())")
                }
                var runs = 0
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await sim.stop()

                let sent = try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign) AND status = 'sent'")
                #expect(sent == devices)
                let times = try Self.acceptedAt(sim.logPath).map(\.at).sorted()
                #expect(Set(try sim.accepted().map(\.token)).count == devices)
                // The most notifications in any 10-second window, against the 200 the pace allows
                // and those sent late, within 250 ms of their slots.
                let most = Self.mostInAnyWindow(times)
                let allowed = perMinute / 6
                let late = Self.lateSends(perMinute: perMinute)
                let seconds = Double((times.last ?? 0) - (times.first ?? 0)) / 1000
                print("fault suite [pace]: \(devices) notifications at \(perMinute)/min set, two workers and a kill: most in 10 s \(most) (allowed \(allowed), and \(late) late), \(String(format: "%.1f", seconds)) s first to last (\(String(format: "%.0f", Double(devices - 1) / seconds * 60))/min)")
                #expect(most <= allowed + late, "\(most) notifications in one 10-second window; the pace allows \(allowed)")
                // Attempts, not acceptances: a request the simulator refused took its slot too.
                let tried = try Self.attemptsAt(sim.attemptsPath).map(\.at)
                #expect(tried.count >= devices)
                #expect(Self.mostInAnyWindow(tried) <= allowed + late, "attempts in one 10-second window over the pace")
                // The analyst view's figures, from the ledger's own times.
                for try await (set, achieved, busiest) in try await client.query("""
                    SELECT set_per_minute::float8, achieved_per_minute::float8, busiest_minute FROM analyst.pace
                    WHERE campaign_id = \(campaign)
                    """).decode((Double, Double?, Int64?).self) {
                    print("fault suite [pace]: analyst.pace: set \(set)/min, achieved \(achieved.map { String(format: "%.0f", $0) } ?? "-")/min, busiest calendar minute \(busiest ?? 0)")
                    #expect(set == Double(perMinute))
                    #expect((achieved ?? 0) <= Double(perMinute) * 1.05)
                }
                // Spread evenly: the whole took at least what the pace needs.
                #expect(seconds >= Double(devices - 1) * 60 / Double(perMinute) - 0.5)
            }
        }
    }
}
