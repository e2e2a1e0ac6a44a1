import APNs
import HeraldCore
import Logging
import Store

/// What one kind of push does in a run: what it makes or reads before its
/// audience, how its audience is written, which token a claimed row reads,
/// whether its rows go by spans, and the notification each device gets.
/// A kind is one type in this folder, chosen by `PlanChoice`; the run, the
/// dry run and the engine ask the plan and never the campaign's columns.
protocol CampaignPlan: Sendable {
    /// The campaign, checked before any device is touched.
    var prepared: PreparedCampaign { get }

    /// The token a claimed row goes to besides its device's own (DESIGN, contract 10).
    var claimToken: ClaimToken { get }

    /// Whether the rows due at once are written as batch rows and sent by span
    /// (docs/DESIGN.md, "The ledger by ranges"); false: row by row.
    var sendsBySpans: Bool { get }

    /// What must exist before the audience is written (a sale's steps and
    /// channels, a widget push's row), and what this run reads for its
    /// payloads (a sale's stock). Throws `CampaignProblem` to fail the campaign.
    mutating func begin(in run: PlanContext) async throws -> PlanStart

    /// Writes the next slice of the audience (a dry run: all of it, without
    /// starting the campaign); nil while it must wait for another campaign's.
    func snapshot(in run: PlanContext) async throws -> SnapshotResult?

    /// What goes out once the audience is written and before any row is
    /// claimed (a sale's step on its broadcast channels).
    func afterSnapshot(in run: PlanContext) async throws

    /// The notification one claimed device gets, or why it is skipped.
    func notification(for target: DeliveryTarget, apps: AppRoutes,
                      personalizer: any DeliveryPersonalizer) -> Result<APNsNotification, CampaignProblem>

    /// What `herald preview` adds for this kind.
    func preview(into preview: inout CampaignPreview, apps: [String], routes: AppRoutes, stores: RunStores) async throws
}

extension CampaignPlan {
    func afterSnapshot(in run: PlanContext) async throws {}
    func preview(into preview: inout CampaignPreview, apps: [String], routes: AppRoutes, stores: RunStores) async throws {}
}

/// What `CampaignPlan.begin` found.
struct PlanStart: Sendable, Equatable {
    /// Campaigns this one made (a widget push), sent by the run once every
    /// due campaign's audience is written.
    var followUps: [Int64] = []
    /// Nothing more is written now: a later run takes the campaign up again.
    var waits = false
}

/// What a plan reads and calls of the run that sends it.
struct PlanContext: Sendable {
    let stores: RunStores
    let options: RunOptions
    let db: DatabaseRetry
    /// APNs' broadcast channels, for sales that use them (nil: none configured, or a dry run).
    let channels: (any ChannelTransport)?
    let runID: Int64
    /// The run's leases, breakers and limits, which every send of the run goes by.
    let leases: LeaseClock
    let breakers: RunBreakers
    let budget: RunBudget?
    let logger: Logger

    var dryRun: Bool { options.dryRun }
}

/// A kind of push: the plan of a prepared campaign of this kind, or nil
/// when the campaign is of another kind.
protocol CampaignPlanKind: CampaignPlan {
    static func plan(for due: DueCampaign, prepared: PreparedCampaign) throws(CampaignProblem) -> Self?
}

/// The one place a campaign's kind of push is chosen: the first kind in
/// order whose `plan(for:)` takes it (an alert when none does).
struct PlanChoice: Sendable {
    let kinds: [any CampaignPlanKind.Type]

    /// Herald's kinds, most particular first.
    static let standard = PlanChoice(kinds: [
        JourneyMessagePlan.self,
        SaleStepPlan.self,
        WidgetPushPlan.self,
        SaleStartPlan.self,
        AlertPlan.self,
    ])

    /// The kinds `kind` goes before (a test's kind of its own).
    func adding(_ kind: any CampaignPlanKind.Type) -> PlanChoice {
        PlanChoice(kinds: [kind] + kinds)
    }

    /// The plan of a loaded campaign; throws `CampaignProblem` when it cannot go out.
    func plan(for due: DueCampaign) throws(CampaignProblem) -> any CampaignPlan {
        let prepared = try PreparedCampaign(campaign: due.campaign, segmentName: due.segmentName, segmentRule: due.segmentRule)
        for kind in kinds {
            if let plan = try kind.plan(for: due, prepared: prepared) { return plan }
        }
        return AlertPlan(due: due, prepared: prepared)
    }
}
