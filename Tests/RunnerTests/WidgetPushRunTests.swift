import APNs
import APNsSimulator
import Foundation
import HeraldCore
import Runner
import Store
import TestSupport
import Testing

/// A campaign with `widgets_push` through real runs against the APNs simulator (TLS + HTTP/2):
/// when it starts, each of its devices that registered a widget token gets one `widgets` push,
/// once, and a device the campaign does not reach gets none.
@Suite("Widget pushes when a campaign starts", .serialized)
struct WidgetPushRunTests {
    @Test func aCampaignReloadsTheWidgetsOfItsDevicesOnceWhenItStarts() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 20))
            try await client.exec(Fixtures.campaign(name: "Deals", kind: "poster"))
            try await client.exec("UPDATE campaigns SET widgets_push = true")
            // Devices 1…8 registered a widget token; user 2 then turned campaigns off.
            let store = WidgetStore(client: client, logger: TestDatabase.logger)
            for id in 1...8 {
                #expect(try await store.register(device: LiveActivityRunTests.token("0", id), user: "u\(id)", app: "default",
                                                 widgetToken: LiveActivityRunTests.token("c", id)) == .stored(created: true))
            }
            #expect(try await store.register(device: LiveActivityRunTests.token("0", 9), user: "u3", app: "default",
                                             widgetToken: LiveActivityRunTests.token("c", 9)) == .unknownDevice)
            try await client.exec("UPDATE users SET opted_out_at = now() WHERE external_id = 'u2'")
            try await withSimulator { sim in
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                let accepted = await sim.simulator.accepted
                let widgets = accepted.filter { $0.headers["apns-push-type"] == "widgets" }
                #expect(widgets.map(\.deviceToken).sorted() == [1, 3, 4, 5, 6, 7, 8].map { LiveActivityRunTests.token("c", $0) })
                #expect(widgets.allSatisfy {
                    $0.headers["apns-topic"] == "com.example.herald.push-type.widgets" && $0.headers["apns-priority"] == "5"
                        && String(decoding: $0.payload, as: UTF8.self) == #"{"aps":{"content-changed":true}}"#
                })
                #expect(accepted.filter { $0.headers["apns-push-type"] == "alert" }.count == 19)
                // The push is a campaign row of its own, completed in the same run; another run sends nothing.
                #expect(try await client.scalar("SELECT status FROM campaigns WHERE widgets_of IS NOT NULL", as: String.self) == "completed")
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(await sim.simulator.accepted.count == accepted.count)
            }
        }
    }
}
