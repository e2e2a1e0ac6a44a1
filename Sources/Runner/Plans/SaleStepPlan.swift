import APNs
import HeraldCore
import Store

/// An update or the end of a Live Activity sale (DESIGN, contract 10): its
/// audience is the sale's activities, its payload the sale's step as the sale
/// reads now; on broadcast channels it goes once to each channel before any
/// device. Row by row, claimed once no earlier step is in flight.
struct SaleStepPlan: CampaignPlanKind {
    let prepared: PreparedCampaign
    let saleID: Int64
    let step: Int
    /// The sale's steps as the sale reads now (nil until `begin`).
    private(set) var sale: ActivityPlan?

    static func plan(for due: DueCampaign, prepared: PreparedCampaign) -> SaleStepPlan? {
        guard let sale = prepared.campaign.saleID, let step = prepared.campaign.saleStep else { return nil }
        return SaleStepPlan(prepared: prepared, saleID: sale, step: step)
    }

    var claimToken: ClaimToken { .activity(sale: saleID) }
    var sendsBySpans: Bool { false }

    /// Reads the sale: one that no longer reads, or has no such step, fails this step alone
    /// with the reason.
    mutating func begin(in run: PlanContext) async throws -> PlanStart {
        let (campaigns, activities, sale) = (run.stores.campaigns, run.stores.liveActivities, saleID)
        let due = try await run.db("load the step's sale") { try await campaigns.loadCampaign(sale) }
        let prepared = try PreparedCampaign(campaign: due.campaign, segmentName: due.segmentName, segmentRule: due.segmentRule)
        guard let start = try SaleStartPlan.plan(for: due, prepared: prepared), step < start.sale.payload.steps.count else {
            throw CampaignProblem("sale \(sale) no longer has a step \(step): its live_activity changed after it started")
        }
        var stock: Int?
        if start.sale.payload.sale.stockFromTable {
            stock = try await run.db("read the sale's stock") { try await activities.stockLeft(sale: sale) }
        }
        self.sale = ActivityPlan(payload: start.sale.payload, step: step, stockLeft: stock)
        return PlanStart()
    }

    /// The sale's activities, written once when the step starts.
    func snapshot(in run: PlanContext) async throws -> SnapshotResult? {
        let (activities, id, sale, dryRun) = (run.stores.liveActivities, prepared.campaign.id, saleID, run.dryRun)
        return try await run.db("snapshot the step's activities") {
            try await activities.snapshotStep(id, sale: sale, start: !dryRun)
        }
    }

    func afterSnapshot(in run: PlanContext) async throws {
        guard !run.dryRun, let sale else { return }
        try await run.broadcast(step: prepared.campaign.id, plan: sale)
    }

    func notification(for target: DeliveryTarget, apps: AppRoutes,
                      personalizer: any DeliveryPersonalizer) -> Result<APNsNotification, CampaignProblem> {
        guard let sale else { return .failure(CampaignProblem("sale \(saleID) was not read")) }
        return LiveActivityPush.notification(sale, target: target, apps: apps)
            ?? .failure(CampaignProblem("activity ended or gave no update token"))
    }
}
