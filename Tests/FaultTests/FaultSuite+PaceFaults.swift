import Foundation
import PostgresNIO
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A campaign's pace under APNs faults and a frozen worker: the simulator
/// answers 10% 503 and 2% 429 (retried with the default attempts), and one of
/// two workers is stopped for 15 s and resumed; no 10-second window of the
/// simulator's attempts (refused ones included, each takes a slot) goes over
/// the pace, and the woken worker does not catch up.
extension FaultSuite {
    @Test func aPacedCampaignStaysUnderItsPaceThrough503sA429AndAFrozenWorker() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let devices = 600
                let perMinute = 1_200  // 200 in any 10 s window
                let campaign = try await Self.campaign(client, devices: devices, name: "Paced", collapseID: "paced")
                try await client.exec("UPDATE campaigns SET rate_per_minute = \(perMinute) WHERE id = \(campaign)")
                let sim = try SimulatorProcess(directory: dir, faults: ["--fail-503", "0.1", "--fail-429", "0.02"])
                try await sim.start()
                // APNS_MAX_ATTEMPTS left at its default; the lease (70 s) outlasts the freeze.
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret(), extra: [
                    "HERALD_CONCURRENCY": "50",
                ])
                let frozen = try Child(name: "worker-a", arguments: ["run"], environment: env, directory: dir)
                let other = try Child(name: "worker-b", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("a sixth sent", limit: .seconds(60)) { sim.acceptedCount() >= devices / 6 }
                frozen.signal(SIGSTOP)
                try await Task.sleep(for: .seconds(15))
                frozen.signal(SIGCONT)
                let wokeAt = Int64(Date().timeIntervalSince1970 * 1000)
                for worker in [frozen, other] {
                    let code = try await worker.wait(limit: .seconds(120))
                    #expect(code == 0, "\(worker.name) exited \(code)\n\(worker.tail())")
                }
                var runs = 2
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await sim.stop()

                let sent = try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign) AND status = 'sent'")
                var attempts: [Int64: Int32] = [:]
                for try await (id, n) in try await client.query(
                    "SELECT id, attempts FROM delivery_status WHERE campaign_id = \(campaign)", logger: TestDatabase.logger
                ).decode((Int64, Int32).self) { attempts[id] = n }
                let lines = try Self.acceptedAt(sim.logPath)
                let tokens = try sim.accepted().map(\.token)
                let allowed = perMinute / 6
                let late = Self.lateSends(perMinute: perMinute)
                let most = Self.mostInAnyWindow(lines.map(\.at))
                // A first attempt leaves at its slot; a retry at its slot plus the answer and a backoff.
                let firstAttempts = lines.filter { $0.delivery.flatMap { attempts[$0] } == 1 }.map(\.at)
                let mostFirst = Self.mostInAnyWindow(firstAttempts)
                let retried = lines.count - firstAttempts.count
                // The woken worker's first two seconds: two seconds of slots is what a paced claim holds.
                let afterWake = firstAttempts.filter { $0 >= wokeAt && $0 < wokeAt + 2_000 }.count
                let times = lines.map(\.at)
                let seconds = Double((times.max() ?? 0) - (times.min() ?? 0)) / 1000
                // Every attempt takes a slot, a refused one too: the simulator's log of attempts.
                let tried = try Self.attemptsAt(sim.attemptsPath)
                let mostTried = Self.mostInAnyWindow(tried.map(\.at))
                let refused = tried.filter { $0.status != 200 }.count
                print("fault suite [pace under faults]: \(devices) at \(perMinute)/min, 10% 503, 2% 429, two workers, one frozen 15 s: "
                      + "most in 10 s \(most) (allowed \(allowed), and \(late) sent late within 250 ms of their slots), first attempts alone \(mostFirst), "
                      + "\(retried) sent on a retry, \(afterWake) first attempts in the 2 s after the wake, runs \(runs), sent \(sent), "
                      + "accepted \(tokens.count), \(String(format: "%.1f", seconds)) s first to last; "
                      + "\(tried.count) attempts (\(refused) refused), most attempts in 10 s \(mostTried)")
                #expect(sent == devices)
                #expect(Set(tokens).count == devices)
                #expect(retried > 0, "the simulator's 503s and 429s were retried")
                // The slots themselves hold the pace, retries aside.
                #expect(mostFirst <= allowed + late, "\(mostFirst) first attempts in one 10-second window; the pace allows \(allowed)")
                // No catch-up once woken: the slots the frozen worker held passed while it was stopped,
                // and it gives them up; the 2 s after the wake hold at most 2 s of the pace (both
                // workers), and the same lateness.
                #expect(afterWake <= 2 * perMinute / 60 + late, "\(afterWake) first attempts in the 2 s after the frozen worker woke")
                #expect(seconds >= Double(devices - 1) * 60 / Double(perMinute) - 0.5)
                #expect(most <= allowed + late, "\(most) notifications in one 10-second window; the pace allows \(allowed)")
                #expect(refused > 0 && tried.count == lines.count + refused, "each refused attempt is in the attempts log")
                #expect(mostTried <= allowed + late, "\(mostTried) attempts, refused ones included, in one 10-second window; the pace allows \(allowed)")
            }
        }
    }
}
