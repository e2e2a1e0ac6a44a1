import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A flash sale as a Live Activity under real faults: its start, then its price drop with a
/// `kill -9` of one of two workers and APNs down for 10 s in the middle, then its end. From the
/// simulator's own log: each activity got the update and the end, in that order, every repeat
/// within the bound of the kill, timestamps that never go back, and nothing once the end went.
extension FaultSuite {
    /// Makes `campaign` a Live Activity sale due now: its price drop in an hour, its end in two
    /// (a test makes each due in turn); every device has a push-to-start token and, as its app
    /// would once started, an activity of the sale (update tokens starting with "d").
    static func liveSale(_ client: Database, campaign: Int64, title: String) async throws {
        try await client.exec("""
            UPDATE campaigns SET kind = 'flash_sale', category_id = 'flash_sale.v1', media_url = NULL, media_type = NULL,
                send_at = now() - interval '1 second', expires_at = now() + interval '2 hours',
                live_activity = jsonb_build_object('title', '\(title)', 'dismiss_after', 600,
                    'state', jsonb_build_object('headline', 'Coats', 'price', '€49'),
                    'updates', jsonb_build_array(jsonb_build_object('state', jsonb_build_object('price', '€39'),
                        'at', to_char((now() + interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))))
            WHERE id = \(campaign);
            INSERT INTO push_to_start_tokens (device_id, attributes_type, token)
            SELECT id, 'HeraldSaleAttributes', 'e' || lpad(to_hex(id), 63, '0') FROM devices;
            INSERT INTO live_activities (campaign_id, device_id, update_token, started_by)
            SELECT \(campaign), id, 'd' || lpad(to_hex(id), 63, '0'), 'push' FROM devices;
            """)
    }

    @Test func aSalesStepsSurviveAKillAndAnOutageInOrderAndNothingAfterTheEnd() async throws {
        let devices = 3_000
        let concurrency = 20
        try await Self.scenario("live activity", devices: devices, name: "Live sale", collapseID: "live",
                                faults: ["--latency-ms", "20"],
                                extra: ["HERALD_CONCURRENCY": "\(concurrency)", "HERALD_OUTAGE_BUDGET_SECONDS": "90"],
                                prepare: { client, campaign in try await Self.liveSale(client, campaign: campaign, title: "Live sale") }) { s in
            let sale = s.campaign
            // The start.
            try await s.runToCompletion()
            // The simulator writes its log every 200 ms: read it once it has settled.
            try await s.sim.settledLog()
            let started = s.sim.acceptedCount()
            #expect(started >= devices)

            // The price drop falls due: two workers, one killed, APNs away for 10 s.
            try await s.client.exec("UPDATE campaigns SET send_at = now() - interval '1 second' WHERE sale_id = \(sale) AND sale_step = 1")
            let a = try s.worker("worker-a")
            let b = try s.worker("worker-b")
            try await waitUntil("500 updates", limit: .seconds(90)) { s.sim.acceptedCount() >= started + 500 || !a.isRunning }
            a.signal(SIGKILL)
            let killed = try await a.wait(limit: .seconds(10)) == 128 + SIGKILL
            try await waitUntil("1,000 updates", limit: .seconds(90)) { s.sim.acceptedCount() >= started + 1_000 || !b.isRunning }
            try await s.sim.stop()
            try await Task.sleep(for: .seconds(10))
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status = 'failed'") == 0, "an outage fails nothing")
            try await s.sim.start()
            let code = try await b.wait(limit: .seconds(180))
            #expect(code == 0 || code == 75, "herald run exited \(code)\n\(b.tail())")
            try await s.runToCompletion()

            // The sale ends: the update is superseded, the end falls due.
            try await s.client.exec("""
                UPDATE campaigns SET expires_at = now() WHERE sale_id = \(sale) AND sale_step = 1;
                UPDATE campaigns SET send_at = now() - interval '1 second' WHERE sale_id = \(sale) AND sale_step = 2
                """)
            try await s.runToCompletion()
            // Once the end went, another run sends nothing.
            try await s.sim.stop()
            let afterEnd = s.sim.acceptedCount()
            try await s.sim.start()
            try await s.runToCompletion()
            try await s.sim.stop()
            #expect(s.sim.acceptedCount() == afterEnd, "nothing after the end")

            // What each activity received, in the simulator's own order.
            let log = try #require(FileManager.default.contents(atPath: s.sim.logPath))
            var events: [String: [(event: String, timestamp: Int)]] = [:]
            for line in log.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
                guard let token = object["token"] as? String, token.hasPrefix("d"),
                      let aps = (object["payload"] as? [String: Any])?["aps"] as? [String: Any] else { continue }
                events[token, default: []].append((aps["event"] as? String ?? "?", (aps["timestamp"] as? NSNumber)?.intValue ?? -1))
            }
            var outOfOrder = 0, backwards = 0, repeats = 0, missing = 0
            for (_, seen) in events {
                let names = seen.map(\.event)
                if let end = names.firstIndex(of: "end"), names[end...].contains("update") { outOfOrder += 1 }
                if zip(seen, seen.dropFirst()).contains(where: { $0.timestamp > $1.timestamp }) { backwards += 1 }
                if !names.contains("update") || !names.contains("end") { missing += 1 }
                repeats += seen.count - Set(names).count
            }
            let sent = try await s.count("""
                SELECT count(*) FROM delivery_status d JOIN campaigns st ON st.id = d.campaign_id
                WHERE st.sale_id = \(sale) AND d.status = 'sent'
                """)
            print("fault suite [live activity]: \(events.count) activities, \(sent) step pushes in the ledger, \(repeats) repeats after \(killed ? 1 : 0) kill and a 10 s outage, \(outOfOrder) out of order, \(backwards) timestamps going back, \(missing) missing a step")
            #expect(events.count == devices)
            #expect(missing == 0 && outOfOrder == 0 && backwards == 0)
            #expect(sent == 2 * devices)
            #expect(repeats <= Self.repeatBound(concurrency: concurrency) + concurrency, "one kill's bound, and what was in flight when APNs went away")
            #expect(try await s.count("SELECT count(*) FROM delivery_status WHERE status IN ('failed', 'queued', 'in_flight')") == 0)
        }
    }
}
