import APNs
import HeraldCore
import Store

/// A campaign's widget push (DESIGN, contract 10, "Widget pushes"): a row of
/// its own, made when a campaign with `widgets_push` starts; once that
/// campaign's audience is written, each of its devices with a widget token
/// gets one `widgets` push (priority 5, `{"aps":{"content-changed":true}}`).
struct WidgetPushPlan: CampaignPlanKind {
    let prepared: PreparedCampaign
    /// The campaign whose devices' widgets reload.
    let campaign: Int64

    static func plan(for due: DueCampaign, prepared: PreparedCampaign) -> WidgetPushPlan? {
        prepared.campaign.widgetsOf.map { WidgetPushPlan(prepared: prepared, campaign: $0) }
    }

    var claimToken: ClaimToken { .widget }
    var sendsBySpans: Bool { false }

    mutating func begin(in run: PlanContext) async throws -> PlanStart { PlanStart() }

    /// Nil until the campaign's audience is written.
    func snapshot(in run: PlanContext) async throws -> SnapshotResult? {
        let (widgets, id, of, dryRun) = (run.stores.widgets, prepared.campaign.id, campaign, run.dryRun)
        let written = try await run.db("snapshot the widget push") { try await widgets.snapshot(id, of: of, start: !dryRun) }
        if written == nil { run.logger.info("widget push waits for its campaign's audience") }
        return written
    }

    func notification(for target: DeliveryTarget, apps: AppRoutes,
                      personalizer: any DeliveryPersonalizer) -> Result<APNsNotification, CampaignProblem> {
        guard let token = target.activityToken else { return .failure(CampaignProblem("no widget token")) }
        guard !apps.certificateApps.contains(target.app) else {
            return .failure(CampaignProblem("app \(target.app) sends with a client certificate, and Apple takes none for widget pushes"))
        }
        return .success(APNsNotification(
            deviceToken: token, environment: target.environment, pushType: "widgets", priority: 5, expiration: nil,
            apnsID: target.apnsID, topic: PushTopic.widgets(apps.topic(app: target.app)), payload: Self.payload,
            credential: apps.credential(app: target.app, environment: target.environment)))
    }

    static let payload = Array(#"{"aps":{"content-changed":true}}"#.utf8)

    /// The widget push of `campaign` as it starts, when it asks for one (a run, not a dry run).
    static func make(for campaign: Campaign, in run: PlanContext) async throws -> [Int64] {
        guard campaign.widgetsPush, !run.dryRun else { return [] }
        let (widgets, id) = (run.stores.widgets, campaign.id)
        let made = try await run.db("make the widget push") { try await widgets.makeWidgetPush(campaign: id) }
        return made.map { [$0] } ?? []
    }
}
