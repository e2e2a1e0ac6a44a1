import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Two steps of a sale in flight at once: the price drop still being sent by a slow worker when
/// the end falls due and a fast worker starts on it. The end is claimed only once nothing of the
/// price drop can still be sent (Sql/0050), however long that takes: here, until the slow
/// worker is killed and its lease lapses. From the simulator's own log: no activity got the
/// price drop after the end, and nothing came once the end went.
extension FaultSuite {
    @Test func aSalesNextStepWaitsForTheStepStillInFlightAndNoDeviceGetsAnOlderStepAfterANewerOne() async throws {
        let devices = 1_500
        let lease = 20
        // One notification takes at most 1 × (1 s + 5 s backoff) + 10 s connect: a 20 s lease.
        let settings = ["HERALD_CONCURRENCY": "100", "APNS_TIMEOUT_SECONDS": "1", "APNS_MAX_ATTEMPTS": "1",
                        "HERALD_LEASE_SECONDS": "\(lease)", "HERALD_OUTAGE_BUDGET_SECONDS": "90"]
        try await Self.scenario("steps in flight", devices: devices, name: "Steps sale", collapseID: "steps",
                                faults: ["--latency-ms", "400"], extra: settings,
                                prepare: { client, campaign in try await Self.liveSale(client, campaign: campaign, title: "Steps sale") }) { s in
            let sale = s.campaign
            try await s.runToCompletion()
            try await s.sim.settledLog()
            let step1 = try await s.count("SELECT id FROM campaigns WHERE sale_id = \(sale) AND sale_step = 1")

            // The price drop, sent slowly: 10 in flight against 400 ms answers, 25 a second.
            try await s.client.exec("UPDATE campaigns SET send_at = now() - interval '1 second' WHERE id = \(step1)")
            let slow = try Child(name: "slow", arguments: ["run"], environment: s.env.merging(["HERALD_CONCURRENCY": "10"]) { $1 },
                                 directory: s.dir)
            try await waitUntil("the price drop under way", limit: .seconds(60)) {
                try await Self.stepAccepted(s, step: 1) >= 50 || !slow.isRunning
            }
            // The end falls due while the price drop is in flight; a fast worker starts on it.
            try await s.client.exec("""
                UPDATE campaigns SET expires_at = now() WHERE id = \(step1);
                UPDATE campaigns SET send_at = now() - interval '1 second' WHERE sale_id = \(sale) AND sale_step = 2
                """)
            let inFlightAtOnce = try await Self.stepInFlightUnderLiveLease(s, step: step1)
            let fast = try s.worker("fast")
            // Longer than the slow worker's lease: a wait that gave up after a lease would send the end now.
            try await Task.sleep(for: .seconds(lease + 4))
            let slowStillSending = slow.isRunning
            let inFlightAtKill = try await Self.stepInFlightUnderLiveLease(s, step: step1)
            let endsBeforeKill = try await Self.stepAccepted(s, step: 2)
            slow.signal(SIGKILL)
            let killed = try await slow.wait(limit: .seconds(10)) == 128 + SIGKILL
            let code = try await fast.wait(limit: .seconds(120))
            #expect(code == 0 || code == 75, "herald run exited \(code)\n\(fast.tail())")
            try await s.runToCompletion()
            try await s.sim.settledLog()

            // Nothing once the end went.
            try await s.sim.stop()
            let afterEnd = s.sim.acceptedCount()
            try await s.sim.start()
            try await s.runToCompletion()
            try await s.sim.stop()

            let seen = try Self.activitySteps(s)
            var olderAfterNewer = 0, ended = 0
            for (_, steps) in seen {
                if let end = steps.firstIndex(of: 2) {
                    ended += 1
                    if steps[end...].contains(where: { $0 < 2 }) { olderAfterNewer += 1 }
                }
            }
            print("fault suite [steps in flight]: \(inFlightAtOnce) price drops in flight when the end fell due, \(inFlightAtKill) still at the kill (\(killed ? "landed" : "missed"), slow worker \(slowStillSending ? "still sending" : "done")), \(endsBeforeKill) ends before it, \(ended) activities ended, \(olderAfterNewer) got an older step after a newer one")
            // The faults landed where they say: both steps in flight at once, the kill while the price drop was sending.
            #expect(inFlightAtOnce > 0, "the price drop was in flight when the end fell due")
            #expect(slowStillSending && killed && inFlightAtKill > 0, "the kill landed while the price drop was being sent")
            #expect(endsBeforeKill == 0, "no end was claimed while the price drop was in flight under a live lease")
            #expect(olderAfterNewer == 0)
            #expect(ended == devices, "every activity got the end")
            #expect(s.sim.acceptedCount() == afterEnd, "nothing after the end")
        }
    }

    /// Pushes of step `step` (its content state's number) the simulator accepted for activities.
    static func stepAccepted(_ s: Scenario, step: Int) async throws -> Int {
        try activitySteps(s).values.reduce(0) { $0 + $1.filter { $0 == step }.count }
    }

    /// Deliveries of campaign `step` in flight under a run whose lease is live.
    static func stepInFlightUnderLiveLease(_ s: Scenario, step: Int) async throws -> Int {
        try await s.count("""
            SELECT count(*) FROM delivery_status d JOIN runs r ON r.id = d.claimed_by
            WHERE d.campaign_id = \(step) AND d.status = 'in_flight' AND r.status = 'running' AND r.lease_expires_at >= now()
            """)
    }

    /// Each activity's steps (the content state's number), in the order the simulator accepted them.
    static func activitySteps(_ s: Scenario) throws -> [String: [Int]] {
        guard let log = FileManager.default.contents(atPath: s.sim.logPath) else { return [:] }
        var steps: [String: [Int]] = [:]
        for line in log.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                  let token = object["token"] as? String, token.hasPrefix("d"),
                  let aps = (object["payload"] as? [String: Any])?["aps"] as? [String: Any],
                  let state = aps["content-state"] as? [String: Any], let step = (state["step"] as? NSNumber)?.intValue
            else { continue }
            steps[token, default: []].append(step)
        }
        return steps
    }
}
