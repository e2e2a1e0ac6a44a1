import APNs
import APNsSimulator
import Foundation
import HeraldCore
import Runner
import Store
import TestSupport
import Testing

/// A flash sale on a broadcast channel (iOS 18) through real runs against the APNs simulator:
/// the channel made through the management API before the start, the start subscribing each
/// device to it, each update and the end sent once to the channel (a transient answer retried,
/// not recorded as a failure), the channel deleted after the dismissal date.
@Suite("Runs of a flash sale on a broadcast channel", .serialized)
struct LiveActivityChannelRunTests {
    static let setup = LiveActivityRunTests.setup.replacingOccurrences(of: "'dismiss_after', 60,", with: "'dismiss_after', 60, 'channel', true,")

    /// Apple states no size for a channel id: the simulator hands out 80 characters (60 bytes).
    static func longChannelIDs(_ configuration: inout SimulatorConfiguration) { configuration.channelIDBytes = 60 }

    @Test func theSaleStartsOnItsChannelAndEachStepIsBroadcastOnce() async throws {
        try await TestDatabase.with { client, _ in
            let sale = try await LiveActivityRunTests.sale(client, setup: Self.setup)
            let store = LiveActivityStore(client: client, logger: TestDatabase.logger)
            try await withSimulator(customize: Self.longChannelIDs) { sim in
                // The start: the channel first, then each push-to-start subscribing to it.
                let first = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(first.figures.sent == 30)
                #expect(await sim.simulator.stats.channelsCreated == 1)
                let channel = try #require(try await client.scalar(
                    "SELECT channel_id FROM activity_channels WHERE campaign_id = \(sale) AND app = 'default' AND environment = 'production'",
                    as: String.self))
                #expect(channel.utf8.count == 80)
                let starts = await sim.simulator.accepted.filter { $0.headers["apns-push-type"] == "liveactivity" }
                #expect(starts.count == 20)
                #expect(starts.allSatisfy { LiveActivityRunTests.aps($0)["input-push-channel"] as? String == channel })
                #expect(starts.allSatisfy { LiveActivityRunTests.aps($0)["input-push-token"] == nil })

                // Devices 1…15 follow the channel; device 16's activity was started by the app with a token of its own.
                for id in 1...15 {
                    #expect(try await store.registerActivity(device: LiveActivityRunTests.token("0", id), user: "u\(id)", app: "default",
                                                             campaign: sale, updateToken: nil, channel: channel, startedBy: "push",
                                                             step: 0) == .stored(created: true))
                }
                #expect(try await store.registerActivity(device: LiveActivityRunTests.token("0", 16), user: "u16", app: "default",
                                                         campaign: sale, updateToken: LiveActivityRunTests.token("d", 16), channel: nil,
                                                         startedBy: "app", step: 0) == .stored(created: true))

                // The price drop: one broadcast for the channel, one push for device 16's token.
                let before = await sim.simulator.accepted.count
                try await LiveActivityRunTests.due(client, sale: sale, step: 1)
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(await sim.simulator.stats.broadcasts == 1)
                let update = Array(await sim.simulator.accepted.dropFirst(before))
                let fannedOut = update.filter { $0.channel == channel }
                #expect(Set(fannedOut.map(\.deviceToken)) == Set((1...20).map { LiveActivityRunTests.token("e", $0) }),
                        "the simulator's log shows each subscribed device the channel reached")
                #expect(fannedOut.allSatisfy { LiveActivityRunTests.aps($0)["event"] as? String == "update" && $0.headers["apns-priority"] == "5" })
                #expect(update.filter { $0.deviceToken == LiveActivityRunTests.token("d", 16) }.count == 1)
                #expect(try await client.scalar("""
                    SELECT count(*) FROM channel_pushes cp JOIN campaigns st ON st.id = cp.campaign_id
                    WHERE st.sale_id = \(sale) AND st.sale_step = 1 AND cp.status = 'sent' AND cp.attempts = 1
                    """, as: Int64.self) == 1, "one ledger row per channel and step")

                // The end, while APNs answers the first broadcast 503: tried again, sent, not a failure.
                await sim.simulator.failBroadcasts(1)
                try await LiveActivityRunTests.due(client, sale: sale, step: 2)
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(await sim.simulator.stats.broadcasts == 2)
                #expect(await sim.simulator.stats.rejected["ServiceUnavailable"] == 1)
                let end = try await client.scalar("""
                    SELECT cp.status || ' after ' || cp.attempts || ', step ' || st.status
                    FROM channel_pushes cp JOIN campaigns st ON st.id = cp.campaign_id
                    WHERE st.sale_id = \(sale) AND st.sale_step = 2
                    """, as: String.self)
                #expect(end == "sent after 2, step completed")

                // Nothing after the end; the channel lives until the dismissal date, then goes.
                let afterEnd = await sim.simulator.stats.broadcasts
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(await sim.simulator.stats.broadcasts == afterEnd)
                #expect(await sim.simulator.stats.channelsDeleted == 0)
                try await client.exec("UPDATE campaigns SET expires_at = now() WHERE sale_id = \(sale) AND sale_step = 2")
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(await sim.simulator.stats.channelsDeleted == 1)
                #expect(try await client.scalar("SELECT count(*) FROM activity_channels WHERE deleted_at IS NOT NULL", as: Int64.self) == 1)

                // The analysts see the channel and what it carried, and per device what it confirmed.
                #expect(try await client.scalar("SELECT channels FROM analyst.live_activities", as: Int64.self) == 1)
                #expect(try await client.scalar("SELECT broadcasts_sent FROM analyst.live_activities", as: Int64.self) == 2)
                #expect(try await client.scalar("SELECT on_channel FROM analyst.live_activities", as: Int64.self) == 15)
            }
        }
    }

    @Test func thePreviewShowsTheSalesStepsItsStartAndWhatItsAppsAllow() async throws {
        try await TestDatabase.with { client, _ in
            let sale = try await LiveActivityRunTests.sale(client, setup: Self.setup)
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let preview = try await CampaignPreview.make(stores: stores, campaign: sale, topic: "com.example.herald")
            #expect(preview.canGoOut, "\(preview.problems)")
            #expect(preview.activitySteps.map(\.event) == ["start", "update", "end"])
            #expect(preview.activitySteps.map(\.priority) == [10, 5, 10])
            #expect(preview.activitySteps[1].state == "headline 40% off coats, price €39, wasPrice €79, stockLeft from sale_stock")
            let start = String(decoding: preview.activityStart, as: UTF8.self)
            #expect(start.contains(#""event":"start""#) && start.contains(#""input-push-channel":"(the channel's id)""#))
            #expect(preview.notes.contains("20 devices of its apps registered a push-to-start token: those in the audience get the start, the others its alert"))
            #expect(preview.notes.contains { $0.hasPrefix("its updates and its end go once to a broadcast channel per app and environment") })
            #expect(preview.text.contains("step 1 update at "))
            // Every app on a certificate: a run would refuse the sale, and the preview says so first.
            var routes = AppRoutes.single(topic: "com.example.herald")
            routes.certificateApps = ["default"]
            let refused = try await CampaignPreview.make(stores: stores, campaign: sale, apps: routes)
            #expect(refused.problems.contains { $0.hasPrefix("app default sends with a client certificate, and Apple takes none for Live Activities") })
        }
    }

    @Test func aChannelAPNsWillNotMakeFailsTheSaleWithItsReasonBeforeAnythingIsSent() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 10))
            try await client.exec(Self.setup)
            try await withSimulator(customize: { $0.channelsPerApp = 0 }) { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.figures.sent == 0)
                #expect(summary.exitStatus == 1, "a person is needed")
                #expect(await sim.simulator.accepted.isEmpty)
                let reason = try await client.scalar("SELECT failure_reason FROM campaigns WHERE live_activity IS NOT NULL", as: String.self)
                #expect(reason == "live_activity.channel: app default (credential: the APNS_* settings) could not make the sale's broadcast channel: APNs answered 400 CannotCreateChannelConfig",
                        "\(reason ?? "none")")
            }
        }
    }

    /// A database that refuses the id APNs answered (here a schema older than the binary, which
    /// held ids to 64 characters): the channel is deleted from APNs at once, the sale fails with
    /// words a person can act on (no SQLSTATE) before any device is started, and the run exits 1.
    @Test func aChannelTheDatabaseRefusesIsDeletedAndFailsTheSaleBeforeAnyDeviceIsStarted() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 10))
            try await client.exec(Self.setup)
            try await client.exec("""
                ALTER TABLE activity_channels ADD CONSTRAINT "channel_id must be base64, at most 64 characters"
                    CHECK (channel_id ~ '^[A-Za-z0-9+/]{1,62}={0,2}$')
                """)
            try await withSimulator(customize: Self.longChannelIDs) { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.figures.sent == 0)
                #expect(summary.exitStatus == 1, "a person is needed")
                #expect(await sim.simulator.accepted.isEmpty, "no device was started, none got the alert")
                #expect(await sim.simulator.stats.channelsCreated == 1)
                #expect(await sim.simulator.stats.channelsDeleted == 1, "the channel APNs made is not left behind")
                let reason = try #require(try await client.scalar("SELECT failure_reason FROM campaigns WHERE live_activity IS NOT NULL", as: String.self))
                #expect(reason.hasPrefix("live_activity.channel: the broadcast channel APNs made for app default (credential: the APNS_* settings) could not be recorded"), "\(reason)")
                #expect(reason.contains("80 characters") && reason.contains("herald migrate"), "\(reason)")
                #expect(!reason.contains("SQLSTATE") && !reason.contains("violates"), "\(reason)")
            }
        }
    }
}
