import APNs
import Foundation
import HeraldCore
import Store

/// A flash sale with a Live Activity (DESIGN, contract 10): before its
/// audience, the rows of its later steps are made and its broadcast channels
/// where it uses them; each device of its segment gets the start by
/// push-to-start, or the sale's alert where it has no push-to-start token.
/// Row by row: a step's gate reads its rows (docs/DESIGN.md, "A sale's steps").
struct SaleStartPlan: CampaignPlanKind {
    let due: DueCampaign
    let prepared: PreparedCampaign
    /// The sale's steps, with what this run read of it (stock, channels).
    private(set) var sale: ActivityPlan

    static func plan(for due: DueCampaign, prepared: PreparedCampaign) throws(CampaignProblem) -> SaleStartPlan? {
        let campaign = prepared.campaign
        guard let json = campaign.liveActivity, campaign.saleID == nil else { return nil }
        let sale = try LiveActivitySale(json: json, sendAt: campaign.sendAt, expiresAt: campaign.expiresAt)
        return SaleStartPlan(due: due, prepared: prepared,
                             sale: ActivityPlan(payload: try ActivityPayload(sale: sale, campaign: campaign), step: 0))
    }

    var claimToken: ClaimToken { .pushToStart }
    var sendsBySpans: Bool { false }

    mutating func begin(in run: PlanContext) async throws -> PlanStart {
        var start = PlanStart(followUps: try await WidgetPushPlan.make(for: prepared.campaign, in: run))
        let id = prepared.campaign.id
        // Devices of an app on a certificate get the alert; a sale none of whose apps could
        // start an activity is refused before anything is sent.
        let campaigns = run.stores.campaigns
        let apps = try await run.db("read the campaign's apps") { try await campaigns.apps(id) }
            ?? run.options.apps.routes.keys.sorted()
        if let refusal = run.options.apps.liveActivityRefusal(apps: apps) { throw CampaignProblem(refusal) }
        let activities = run.stores.liveActivities
        let payload = sale.payload
        if !run.dryRun {
            let later = Array(payload.steps.dropFirst())
            _ = try await run.db("make the sale's steps") {
                try await activities.makeSteps(sale: id, at: later.map(\.at), until: later.map { payload.expiration($0) })
            }
        }
        if payload.sale.stockFromTable {
            sale.stockLeft = try await run.db("read the sale's stock") { try await activities.stockLeft(sale: id) }
        }
        if !run.dryRun, payload.sale.channel {
            guard let channels = try await run.makeChannels(sale: id) else {
                start.waits = true
                return start
            }
            sale.channels = channels
        }
        return start
    }

    func snapshot(in run: PlanContext) async throws -> SnapshotResult? {
        try await AlertPlan.snapshot(due, spans: false, in: run)
    }

    func notification(for target: DeliveryTarget, apps: AppRoutes,
                      personalizer: any DeliveryPersonalizer) -> Result<APNsNotification, CampaignProblem> {
        LiveActivityPush.notification(sale, target: target, apps: apps)
            ?? AlertPlan.notification(prepared: prepared, target: target, apps: apps, personalizer: personalizer)
    }

    /// The sale's steps, its start's payload, and what its apps and devices allow (as `begin`
    /// decides it).
    func preview(into preview: inout CampaignPreview, apps names: [String], routes: AppRoutes, stores: RunStores) async throws {
        let sale = self.sale.payload
        preview.activitySteps = sale.steps.map { step in
            var parts = LiveActivitySale.Field.allCases.compactMap { field -> String? in
                guard let value = step.state[field] else { return nil }
                if case .string(let text) = value { return "\(field.rawValue) \(text)" }
                if case .int(let n) = value { return "\(field.rawValue) \(n)" }
                return nil
            }
            if sale.sale.stockFromTable, step.event != .end { parts.append("stockLeft from sale_stock") }
            return CampaignPreview.ActivityStepPreview(step: step.number, event: step.event.rawValue, at: step.at, priority: sale.priority(step),
                                       expiresAt: sale.expiration(step), state: parts.joined(separator: ", "), alerts: step.alert != nil)
        }
        let start = sale.start(at: max(Date(), sale.steps[0].at))
        preview.activityStart = sale.payload(start, address: sale.sale.channel ? .startOnChannel("(the channel's id)") : .startByToken,
                                             locale: sale.campaign.defaultLocale)
        let certificates = names.filter(routes.certificateApps.contains)
        if let refusal = routes.liveActivityRefusal(apps: names) {
            preview.problems.append(refusal)
        } else if !certificates.isEmpty {
            preview.notes.append("apps \(certificates.joined(separator: ", ")) send with a client certificate: their devices get the sale's alert")
        }
        let channels = try await stores.liveActivities.channelsNeeded(apps: names)
        let registered = try await stores.liveActivities.pushToStartDevices(apps: names)
        preview.notes.append("\(registered) devices of its apps registered a push-to-start token: those in the audience get the start, the others its alert")
        if sale.sale.channel {
            preview.notes.append("its updates and its end go once to a broadcast channel per app and environment, made when it starts (\(channels.count) now: \(channels.map { "\($0.app) \($0.environment.rawValue)" }.joined(separator: ", ")))")
        }
    }
}
