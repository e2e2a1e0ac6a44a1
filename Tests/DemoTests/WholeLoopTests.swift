import Settings
import Demo
import Foundation
import PostgresNIO
import Runner
import Store
import Testing
import TestSupport

@Suite("The whole loop: campaigns → APNs → devices → replies → analyst views")
struct WholeLoopTests {
    @Test func sampleCampaignsEndInTheAnalystViews() async throws {
        try await TestDatabase.with { client, database in
            try await SQLScript.run(file: TestDatabase.sqlDirectory.appendingPathComponent("sample_data.sql"),
                                    on: client, logger: TestDatabase.logger)
            var config = try HeraldConfiguration(environment: [
                "DATABASE_URL": "postgres://unused@127.0.0.1/unused", "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
            ])
            config.database = database
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("herald-loop-\(UUID())")
            defer { try? FileManager.default.removeItem(at: work) }
            let outcome = try await DemoLoop(configuration: config, workDirectory: work, logger: TestDatabase.logger).execute()

            // The runs: every queued delivery went out, except the three devices APNs refused.
            #expect(outcome.runs.map(\.figures.failed) == [0, 0])
            // Campaigns sending at once may each hear a refused device's 410
            // before the first answer marks it invalid; after that none is sent to it.
            let invalidAnswers = outcome.runs.reduce(0) { $0 + $1.figures.invalid + $1.configRefresh.invalid }
            #expect((3...9).contains(invalidAnswers), "\(invalidAnswers)")
            #expect(outcome.runs[1].campaigns.filter(\.completed).count == 3)
            // (A journey's messages stay scheduled while it runs: members may still reach them.)
            #expect(try await client.scalar("SELECT count(*) FROM campaigns WHERE status <> 'completed' AND journey_id IS NULL", as: Int64.self) == 0)
            let invalid = try await client.scalar("SELECT count(*) FROM devices dv WHERE EXISTS (SELECT 1 FROM delivery_status d WHERE d.device_id = dv.id AND d.status = 'invalid') AND dv.invalidated_at IS NOT NULL", as: Int64.self)
            #expect(invalid == 3)

            // The devices that got the flash sale opened every sealed envelope
            // and said so in their receipts; the ones that stayed off sent none.
            let flash = try await client.query("""
                SELECT x.sent, x.delivered, x.sealed_opened, x.sealed_failed FROM analyst.delivery_confirmation x
                JOIN campaigns c ON c.id = x.campaign_id WHERE c.kind = 'flash_sale' AND c.live_activity IS NULL AND c.sale_id IS NULL
                """, logger: TestDatabase.logger)
            for try await (sent, delivered, opened, failed) in flash.decode((Int64, Int64, Int64, Int64).self) {
                #expect(opened == Int64(outcome.fleet.sealedOpened) && failed == 0 && delivered == opened && delivered < sent)
            }
            #expect(outcome.fleet.sealedFailed == 0)
            #expect(outcome.fleet.arrived > 0 && outcome.fleet.neverArrived > 0)
            #expect(outcome.fleet.receiptsStored == outcome.fleet.arrived)
            // (A Live Activity's pushes go to ActivityKit, not the service extension: no receipt.)
            // (The journey's apology, thanks and reminder are not given to the fleet: no receipt.)
            let gap = try await client.scalar("""
                SELECT (sum(sent) - sum(delivered))::bigint FROM analyst.delivery_confirmation x JOIN campaigns c ON c.id = x.campaign_id
                WHERE c.live_activity IS NULL AND c.sale_id IS NULL AND c.journey_id IS NULL
                """, as: Int64.self)
            #expect(gap == Int64(outcome.fleet.neverArrived))
            #expect(outcome.fleet.refused.isEmpty)
            #expect(outcome.fleet.duplicates > 0)

            // The analyst views hold exactly what the devices said.
            let replies = try await client.scalar("SELECT sum(replies)::bigint FROM analyst.campaign_funnel", as: Int64.self)
            #expect(replies == Int64(outcome.fleet.stored + outcome.journey.devices.stored))
            let byAction = try await client.scalar("SELECT sum(replies)::bigint FROM analyst.action_breakdown", as: Int64.self)
            #expect(byAction == replies)
            let typed = try await client.scalar("""
                SELECT count(*) FROM analyst.feedback_text f JOIN campaigns c ON c.id = f.campaign_id
                WHERE c.kind = 'feedback' AND f.action = 'comment'
                """, as: Int64.self)
            let comments = try await client.scalar("SELECT count(*) FROM replies WHERE action = 'comment'", as: Int64.self)
            #expect(typed == comments)
            #expect((typed ?? 0) > 50)
            let accepted = try String(contentsOfFile: outcome.acceptedLog, encoding: .utf8).split(separator: "\n").count
            // A sale's steps are under the sale (analyst.live_activity_steps), not in the funnel.
            let sent = try await client.scalar(
                "SELECT ((SELECT sum(sent) FROM analyst.campaign_funnel) + (SELECT coalesce(sum(sent), 0) FROM analyst.live_activity_steps))::bigint",
                as: Int64.self)
            let refreshes = try await client.scalar("SELECT count(*) FROM delivery_status WHERE kind = 'config_refresh' AND status = 'sent'", as: Int64.self)
            #expect(Int64(accepted) == (sent ?? 0) + (refreshes ?? 0))

            // Two apps in one run and one intake: the shop's devices on its
            // .p8 key, the companion's through its .p12 certificate (its own
            // topic, no provider token), each registered by its own backend.
            let lines = try String(contentsOfFile: outcome.acceptedLog, encoding: .utf8).split(separator: "\n")
            let companion = lines.filter { $0.contains(DemoLoop.companionTopic) }
            #expect(companion.count > 50 && companion.count < lines.count / 2, "\(companion.count) of \(lines.count)")
            #expect(outcome.runs.allSatisfy { $0.refusedApps.isEmpty })
            let apps = try await client.query("SELECT app, devices, sent FROM analyst.apps ORDER BY app", logger: TestDatabase.logger)
            var byApp: [String: (Int64, Int64)] = [:]
            for try await (app, devices, sent) in apps.decode((String, Int64, Int64).self) { byApp[app] = (devices, sent) }
            #expect(byApp["companion"]?.0 == 85 && byApp["default"]?.0 == 257)
            #expect((byApp["companion"]?.1 ?? 0) > 0 && (byApp["default"]?.1 ?? 0) > (byApp["companion"]?.1 ?? 0))
            #expect(outcome.report.contains("app companion (Shop companion, com.example.herald.companion): 85 devices; sent"))

            // The poster held out a fifth of its users (never sent: the simulator
            // accepted exactly what the ledger sent, above); the shop's purchases
            // give its lift, for the whole campaign and each variant.
            #expect(outcome.purchases > 0)
            #expect(try await client.scalar("""
                SELECT count(*) FROM delivery_status WHERE status = 'held_out' AND (sent_at IS NOT NULL OR attempts > 0)
                """, as: Int64.self) == 0)
            let lift = try await client.query("""
                SELECT coalesce(variant, '-'), treated, held_out, verdict FROM analyst.lift ORDER BY variant NULLS FIRST
                """, logger: TestDatabase.logger)
            var rows: [String] = []
            for try await (variant, treated, heldOut, verdict) in lift.decode((String, Int64, Int64, String).self) {
                rows.append(variant)
                #expect(heldOut > 30 && treated > heldOut && !verdict.isEmpty)
            }
            #expect(rows == ["-", "A", "B"])
            #expect(outcome.report.contains("lift, purchase: "))

            // The devices registered themselves through the API, got the config
            // refresh before the flash sale (none at the sale itself), and every
            // notification found its category registered (its buttons shown).
            #expect(outcome.apps.registered == 342)
            #expect(outcome.apps.loggedOut == 8)
            #expect(outcome.apps.refused.isEmpty)
            #expect(outcome.apps.withConfigAtRegistration > 0)
            #expect(outcome.runs[0].configRefresh.sent > 0)
            #expect(outcome.runs[0].configRefresh.sent == outcome.apps.refreshPushes)
            #expect(outcome.runs[1].configRefresh.queued == 0)
            #expect(outcome.apps.configFetched == outcome.apps.withConfigAtRegistration + outcome.apps.refreshPushes)
            #expect(outcome.apps.reRegistered == outcome.apps.refreshPushes)
            #expect(outcome.fleet.withoutButtons == 0)
            #expect(outcome.apps.reserveTitles["fr"] == "Réserver")
            #expect(outcome.apps.reserveTitles["zh-Hans"] == "立即预订")
            #expect(outcome.runs[0].campaigns.isEmpty, "nothing is due half an hour before")
            #expect(Set(outcome.runs[1].campaigns.compactMap(\.kind)) == [.poster, .flashSale, .feedback])

            // Later, the flash sale as a Live Activity: the shop's devices that registered a
            // push-to-start token were started by it, showed each of its states once and in order
            // through its end, and said so; the others (and the companion's, on a certificate)
            // got no activity.
            #expect(outcome.sale.pushToStartRegistered > 150 && outcome.sale.refused.isEmpty, "\(outcome.sale)")
            #expect(outcome.sale.started > 150 && outcome.sale.started <= outcome.sale.pushToStartRegistered)
            #expect(outcome.sale.inOrder == outcome.sale.started && outcome.sale.outOfOrder == 0, "\(outcome.sale)")
            #expect(outcome.sale.ended == outcome.sale.started)
            #expect(outcome.sale.confirmations == outcome.sale.started * 4)
            #expect(outcome.sale.states == ["€89, 300 left", "€69, 190 left", "€59, 80 left", "end €59"], "\(outcome.sale.states)")
            #expect(outcome.saleRuns.count == 4 && outcome.saleRuns.allSatisfy { $0.figures.failed == 0 })
            #expect(try await client.scalar("""
                SELECT started_by_push FROM analyst.live_activities WHERE name = 'Winter coats countdown'
                """, as: Int64.self) == Int64(outcome.sale.started))
            #expect(try await client.scalar("""
                SELECT count(*) FROM analyst.live_activity_devices WHERE confirmed_step = 3 AND ended_at IS NOT NULL
                """, as: Int64.self) == Int64(outcome.sale.started))

            // They answered in their own language.
            let chinese = try await client.scalar("""
                SELECT count(*) FROM analyst.feedback_text WHERE locale = 'zh-Hans' AND text !~ '[一-龥]'
                """, as: Int64.self)
            #expect(chinese == 0)
            let french = try await client.scalar("SELECT count(*) FROM analyst.feedback_text WHERE locale = 'fr'", as: Int64.self)
            #expect((french ?? 0) > 0)
            #expect(outcome.report.contains("How was your order?"))

            // Then the journey "After the order": each member left the listening step by
            // the edge its devices' answers (or its purchase, or its silence) call for, as
            // analyst.journey_flow shows it, every path taken by someone; an apology drew
            // one code for each user it went to.
            let journey = outcome.journey
            #expect(journey.matches, "\(journey)")
            #expect(journey.entered == journey.ordersDelivered && journey.entered > 100, "\(journey)")
            #expect(OrderJourneyReport.Path.allCases.allSatisfy { journey.expected[$0, default: 0] > 0 }, "\(journey)")
            #expect(journey.devices.refused.isEmpty && journey.devices.stored > 50, "\(journey)")
            let messages = Dictionary(journey.sent.map { ($0.message, ($0.sent, $0.codes)) }, uniquingKeysWith: { a, _ in a })
            #expect(messages["After the order: sorry"]?.1 == journey.seen(.complained), "\(journey)")
            #expect((messages["After the order: reminder"]?.0 ?? 0) > 0 && (messages["After the order: thanks"]?.0 ?? 0) >= journey.seen(.answered))
            #expect(try await client.scalar("SELECT count(*) FROM journey_members WHERE state = 'active'", as: Int64.self) == 0)
        }
    }
}
