import APNs
import APNsSimulator
import Foundation
import HeraldCore
import Reporting
import Runner
import Store
import TestSupport
import Testing

/// A flash sale run as a Live Activity through real runs against the APNs simulator (TLS +
/// HTTP/2): the start by push-to-start (the alert for devices without a push-to-start token),
/// each step's update and end to the activities the app registered, in order, and nothing to an
/// activity that ended.
@Suite("Runs of a flash sale as a Live Activity", .serialized)
struct LiveActivityRunTests {
    /// 30 users and devices; devices 1…20 registered a push-to-start token. The sale is due; its
    /// price drop comes in an hour and its end in two (the test makes each due in turn, so that
    /// no figure depends on how fast a loaded machine runs); its stock is read.
    static let setup = """
        INSERT INTO push_to_start_tokens (device_id, attributes_type, token)
        SELECT id, 'HeraldSaleAttributes', 'e' || lpad(to_hex(id), 63, '0') FROM devices WHERE id <= 20;
        INSERT INTO campaigns (name, kind, status, content, default_locale, category_id, quiet_hours, frequency_capped,
                               send_at, expires_at, live_activity)
        VALUES ('Autumn sale', 'flash_sale', 'scheduled',
                '{"en": {"title": "Flash sale", "body": "Coats at €49"}, "fr": {"title": "Vente flash", "body": "Manteaux à 49 €"}}',
                'en', 'flash_sale.v1', false, false, now() - interval '1 second', now() + interval '2 hours',
                jsonb_build_object('title', 'Autumn sale', 'stock', true, 'dismiss_after', 60,
                    'state', jsonb_build_object('headline', '40% off coats', 'price', '€49', 'wasPrice', '€79'),
                    'updates', jsonb_build_array(jsonb_build_object(
                        'at', to_char((now() + interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                        'state', jsonb_build_object('price', '€39')))));
        INSERT INTO sale_stock (campaign_id, stock_left) SELECT id, 120 FROM campaigns;
        """

    /// The catalogue, 30 devices and the sale of `setup`; the sale's id.
    static func sale(_ client: Database, setup: String = setup) async throws -> Int64 {
        try await client.exec(Fixtures.catalogue)
        try await client.exec(Fixtures.audience(count: 30))
        try await client.exec(setup)
        return try #require(try await client.scalar("SELECT id FROM campaigns WHERE live_activity IS NOT NULL", as: Int64.self))
    }

    /// Makes step `step` of `sale` due now, as its time coming would; the step before it is
    /// superseded then, as the step's own time would make it.
    static func due(_ client: Database, sale: Int64, step: Int) async throws {
        try await client.exec("""
            UPDATE campaigns SET expires_at = now() WHERE sale_id = \(sale) AND sale_step = \(step - 1);
            UPDATE campaigns SET send_at = now() - interval '1 second' WHERE sale_id = \(sale) AND sale_step = \(step)
            """)
    }

    static func aps(_ n: AcceptedNotification) -> [String: Any] {
        ((try? JSONSerialization.jsonObject(with: Data(n.payload)) as? [String: Any])?["aps"] as? [String: Any]) ?? [:]
    }

    static func token(_ prefix: String, _ id: Int) -> String {
        prefix + String(repeating: "0", count: 63 - String(id, radix: 16).count) + String(id, radix: 16)
    }

    @Test func theSaleStartsUpdatesAndEndsEachActivityOnceInOrder() async throws {
        try await TestDatabase.with { client, _ in
            let sale = try await Self.sale(client)
            let store = LiveActivityStore(client: client, logger: TestDatabase.logger)
            try await withSimulator { sim in
                // The start: push-to-start where the device has a token, the alert where it has none.
                let first = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(first.figures.sent == 30)
                let started = await sim.simulator.accepted
                let starts = started.filter { $0.headers["apns-push-type"] == "liveactivity" }
                #expect(starts.count == 20)
                #expect(Set(starts.map(\.deviceToken)) == Set((1...20).map { Self.token("e", $0) }))
                #expect(starts.allSatisfy { $0.headers["apns-topic"] == "com.example.herald.push-type.liveactivity" && $0.headers["apns-priority"] == "10" })
                let start = Self.aps(try #require(starts.first))
                #expect(start["event"] as? String == "start" && start["attributes-type"] as? String == "HeraldSaleAttributes")
                #expect((start["content-state"] as? [String: Any])?["stockLeft"] as? Int == 120)
                #expect(started.filter { $0.headers["apns-push-type"] == "alert" }.count == 10)
                // The steps after the start are rows of their own.
                #expect(try await client.scalar("SELECT count(*) FROM campaigns WHERE sale_id = \(sale)", as: Int64.self) == 2)

                // The apps register their activities' update tokens; device 3's activity then ends.
                for id in 1...15 {
                    let registered = try await store.registerActivity(
                        device: Self.token("0", id), user: "u\(id)", app: "default", campaign: sale,
                        updateToken: Self.token("d", id), channel: nil, startedBy: "push", step: 0)
                    #expect(registered == .stored(created: true))
                }
                #expect(try await store.endActivity(device: Self.token("0", 3), user: "u3", app: "default", campaign: sale) == .ended)
                // Another user cannot register a device that is not theirs.
                #expect(try await store.registerActivity(device: Self.token("0", 4), user: "u5", app: "default", campaign: sale,
                                                         updateToken: Self.token("d", 4), channel: nil, startedBy: "push", step: 0) == .unknownDevice)
                try await client.exec("UPDATE sale_stock SET stock_left = 77")

                // The price drop, once it is due: 14 activities, silent, at priority 5.
                try await Self.due(client, sale: sale, step: 1)
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                // The end, once the sale is over.
                try await Self.due(client, sale: sale, step: 2)
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                // Nothing after the end: another run sends nothing.
                let afterEnd = await sim.simulator.accepted.count
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(await sim.simulator.accepted.count == afterEnd)

                let all = await sim.simulator.accepted
                let steps = all.filter { $0.deviceToken.hasPrefix("d") }
                var byDevice: [String: [String]] = [:]
                for n in steps { byDevice[n.deviceToken, default: []].append(Self.aps(n)["event"] as? String ?? "?") }
                let expected = Set((1...15).filter { $0 != 3 }.map { Self.token("d", $0) })
                #expect(Set(byDevice.keys) == expected, "every registered activity, not the one that ended")
                #expect(byDevice.values.allSatisfy { $0 == ["update", "end"] }, "\(byDevice)")
                let update = try #require(steps.first { Self.aps($0)["event"] as? String == "update" })
                #expect(update.headers["apns-priority"] == "5")
                let state = try #require(Self.aps(update)["content-state"] as? [String: Any])
                #expect(state["price"] as? String == "€39" && state["wasPrice"] as? String == "€79" && state["stockLeft"] as? Int == 77)
                #expect(state["step"] as? Int == 1)
                let end = try #require(steps.first { Self.aps($0)["event"] as? String == "end" })
                #expect(end.headers["apns-priority"] == "10")
                #expect(Self.aps(end)["dismissal-date"] as? Int != nil)
                // The timestamps go forward on every device.
                for device in expected {
                    let stamps = steps.filter { $0.deviceToken == device }.compactMap { Self.aps($0)["timestamp"] as? Int }
                    #expect(stamps == stamps.sorted() && Set(stamps).count == stamps.count)
                }

                // The analysts see it.
                #expect(try await client.scalar("SELECT started_by_push FROM analyst.live_activities", as: Int64.self) == 15)
                #expect(try await client.scalar("SELECT ended_on_device FROM analyst.live_activities", as: Int64.self) == 1)
                #expect(try await client.scalar("SELECT step_pushes_sent FROM analyst.live_activities", as: Int64.self) == 28)

                // One campaign in the report, its steps under it, what the activities confirmed
                // in place of receipts they never send; the apps' summary counts the same.
                for id in [1, 2] {
                    _ = try await store.registerActivity(device: Self.token("0", id), user: "u\(id)", app: "default", campaign: sale,
                                                         updateToken: Self.token("d", id), channel: nil, startedBy: "push", step: 2)
                }
                #expect(try await client.scalar("SELECT count(*) FROM analyst.campaign_funnel", as: Int64.self) == 1,
                        "the steps are under their sale, not campaigns of their own")
                let data = try await AnalystReport(client: client, logger: TestDatabase.logger).data()
                let report = try #require(data.campaigns.first)
                #expect(data.campaigns.count == 1 && report.id == sale)
                let saleSteps = try #require(report.sale?.steps)
                #expect(saleSteps.map(\.step) == [1, 2] && saleSteps.map(\.sent) == [14, 14] && saleSteps.map(\.confirmed) == [2, 2])
                let text = TextReport.text(data)
                #expect(text.contains("start: 15 activities confirmed of 30 sent"), "\(text)")
                #expect(text.contains("sent 14 to activities; 2 activities confirmed it"), "\(text)")
                #expect(!text.contains("delivered 0 of"), "\(text)")
                let page = ReportPage.html(data)
                #expect(page.contains("Activities confirmed") && page.contains("<h3>Live Activity</h3>"))
                #expect(!page.contains("…</text>"), "every bar label fits")
                // 15 starts the devices confirmed, and steps 1 and 2 on devices 1 and 2.
                #expect(try await client.scalar("SELECT delivered FROM analyst.apps WHERE app = 'default'", as: Int64.self) == 19)
            }
        }
    }

    @Test func aSaleThatDoesNotReadFailsAloneNamingTheField() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 5))
            try await client.exec(Fixtures.campaign(name: "Plain", kind: "poster"))
            try await client.exec("""
                INSERT INTO campaigns (name, kind, status, content, default_locale, category_id, quiet_hours, frequency_capped, expires_at, live_activity)
                VALUES ('Broken sale', 'flash_sale', 'scheduled', '{"en": {"title": "t", "body": "b"}}', 'en', 'flash_sale.v1', false, false,
                        now() + interval '1 hour', '{"title": "t", "state": {"headline": "h", "price": "p", "discount": 3}}')
                """)
            try await withSimulator { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.figures.sent == 5, "the other campaign still goes out")
                let reason = try await client.scalar("SELECT failure_reason FROM campaigns WHERE name = 'Broken sale'", as: String.self)
                #expect(reason == #"live_activity.state has "discount"; the app's content state has headline, price, wasPrice and stockLeft"#)
            }
        }
    }

    @Test func anAppOnACertificateGetsAClearRefusalBeforeAnythingIsSent() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 10))
            try await client.exec(Self.setup)
            try await withSimulator { sim in
                var options = RunOptions(topic: sim.clientConfiguration.topic)
                options.apps.certificateApps = ["default"]
                let summary = try await sendRun(client, apns: sim.clientConfiguration, options: options)
                #expect(summary.figures.sent == 0)
                #expect(await sim.simulator.accepted.isEmpty)
                let reason = try await client.scalar("SELECT failure_reason FROM campaigns WHERE live_activity IS NOT NULL", as: String.self)
                #expect(reason?.hasPrefix("app default sends with a client certificate, and Apple takes none for Live Activities") == true, "\(reason ?? "none")")
                #expect(try await client.scalar("SELECT count(*) FROM campaigns WHERE sale_id IS NOT NULL", as: Int64.self) == 0)
            }
        }
    }
}
