import APNs
import APNsSimulator
import Foundation
import HeraldCore
@testable import Runner
import Store
import TestSupport
import Testing

/// A kind of push is one `CampaignPlan` type, chosen in one place (`PlanChoice`): a run asks
/// the plan, never the campaign's columns, for its audience, its claim, its rows' path and
/// each device's notification.
@Suite("Kinds of push, one plan each", .serialized)
struct CampaignPlanTests {
    /// A kind Herald does not have, written as a new kind would be: one type, and one line
    /// where the plans are chosen. A campaign whose `custom` says `"refresh": true` reaches
    /// its segment as a background push (no alert, priority 5), by spans.
    struct BackgroundRefreshPlan: CampaignPlanKind {
        let due: DueCampaign
        let prepared: PreparedCampaign

        static func plan(for due: DueCampaign, prepared: PreparedCampaign) -> BackgroundRefreshPlan? {
            prepared.campaign.custom["refresh"] == .bool(true) ? BackgroundRefreshPlan(due: due, prepared: prepared) : nil
        }

        var claimToken: ClaimToken { .device }
        var sendsBySpans: Bool { true }

        mutating func begin(in run: PlanContext) async throws -> PlanStart { PlanStart() }

        func snapshot(in run: PlanContext) async throws -> SnapshotResult? {
            try await AlertPlan.snapshot(due, spans: sendsBySpans, in: run)
        }

        func notification(for target: DeliveryTarget, apps: AppRoutes,
                          personalizer: any DeliveryPersonalizer) -> Result<APNsNotification, CampaignProblem> {
            .success(APNsNotification(
                deviceToken: target.deviceToken, environment: target.environment, pushType: "background", priority: 5,
                expiration: nil, apnsID: target.apnsID, topic: apps.topic(app: target.app),
                payload: Array(#"{"aps":{"content-available":1},"refresh":true}"#.utf8),
                credential: apps.credential(app: target.app, environment: target.environment)))
        }
    }

    @Test("a kind added as one type and one line of the choice is sent through the run's engine and ledger, beside an alert")
    func aNewKindIsOneTypeAndOneLine() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 300))
            try await client.exec(Fixtures.campaign(name: "Refresh"))
            try await client.exec(Fixtures.campaign(name: "Poster"))
            try await client.exec(#"UPDATE campaigns SET custom = '{"refresh": true}' WHERE name = 'Refresh'"#)
            try await withSimulator { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration,
                                                options: RunOptions(topic: sim.topic, batchSize: 100, concurrency: 50)) {
                    $0.plans = PlanChoice.standard.adding(BackgroundRefreshPlan.self)
                }
                #expect(summary.campaigns.allSatisfy { $0.completed })
                let accepted = await sim.simulator.accepted
                let background = accepted.filter { $0.headers["apns-push-type"] == "background" }
                let alerts = accepted.filter { $0.headers["apns-push-type"] == "alert" }
                #expect(background.count == 300)
                #expect(alerts.count == 300)
                #expect(Set(background.map(\.deviceToken)).count == 300)
                #expect(background.allSatisfy {
                    $0.headers["apns-priority"] == "5"
                        && String(decoding: $0.payload, as: UTF8.self) == #"{"aps":{"content-available":1},"refresh":true}"#
                })
                // The ledger holds each row as sent with the apns-id APNs took, written by spans.
                let refresh = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Refresh'", as: Int64.self))
                #expect(try await client.scalar(
                    "SELECT count(*) FROM delivery_status WHERE campaign_id = \(refresh) AND status = 'sent'", as: Int64.self) == 300)
                #expect(try await client.scalar(
                    "SELECT count(*) FROM delivery_spans WHERE campaign_id = \(refresh)", as: Int64.self) ?? 0 > 0)
            }
        }
    }

    @Test("each campaign's kind is chosen once, by the first plan that takes it")
    func theChoiceOfKinds() throws {
        func plan(_ change: (inout Campaign) -> Void, choice: PlanChoice = .standard) throws -> any CampaignPlan {
            var campaign = Campaign(id: 7, name: "c", kind: .poster, content: ["en": LocalizedText(title: "t", body: "b")])
            change(&campaign)
            return try choice.plan(for: DueCampaign(campaign: campaign, segmentName: nil, segmentRule: .object([:])))
        }
        #expect(try plan { _ in } is AlertPlan)
        #expect(try plan { $0.pace = .perMinute(60) } is AlertPlan)
        #expect(try plan { $0.widgetsOf = 3 } is WidgetPushPlan)
        #expect(try plan { $0.saleID = 3; $0.saleStep = 1 } is SaleStepPlan)
        #expect(try plan { $0.custom = ["refresh": .bool(true)] } is AlertPlan)
        #expect(try plan({ $0.custom = ["refresh": .bool(true)] }, choice: .standard.adding(BackgroundRefreshPlan.self))
            is BackgroundRefreshPlan)
        // Only an alert that is not paced goes by spans; a widget push and a sale's step row by row.
        #expect(try plan { _ in }.sendsBySpans)
        #expect(try !plan { $0.pace = .perMinute(60) }.sendsBySpans)
        #expect(try !plan { $0.widgetsOf = 3 }.sendsBySpans)
        #expect(try !plan { $0.saleID = 3; $0.saleStep = 1 }.sendsBySpans)
        #expect(try plan { $0.saleID = 3; $0.saleStep = 1 }.claimToken == .activity(sale: 3))
        #expect(try plan { $0.widgetsOf = 3 }.claimToken == .widget)
        #expect(try plan { _ in }.claimToken == .device)
    }
}
