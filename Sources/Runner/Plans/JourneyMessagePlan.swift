import APNs
import HeraldCore
import Store

/// A journey's message (DESIGN, contract 11): the campaign of a send step. Its rows are
/// written by its journey's members' moves, never by a snapshot of a segment; the run sends
/// whatever of them is queued, row by row, as an alert.
struct JourneyMessagePlan: CampaignPlanKind {
    let prepared: PreparedCampaign

    static func plan(for due: DueCampaign, prepared: PreparedCampaign) -> JourneyMessagePlan? {
        prepared.campaign.journeyID == nil ? nil : JourneyMessagePlan(prepared: prepared)
    }

    var claimToken: ClaimToken { .device }
    var sendsBySpans: Bool { false }

    mutating func begin(in run: PlanContext) async throws -> PlanStart { PlanStart() }

    /// Nothing to write: the moves wrote the rows.
    func snapshot(in run: PlanContext) async throws -> SnapshotResult? {
        SnapshotResult(complete: true)
    }

    func notification(for target: DeliveryTarget, apps: AppRoutes,
                      personalizer: any DeliveryPersonalizer) -> Result<APNsNotification, CampaignProblem> {
        AlertPlan.notification(prepared: prepared, target: target, apps: apps, personalizer: personalizer)
    }
}
