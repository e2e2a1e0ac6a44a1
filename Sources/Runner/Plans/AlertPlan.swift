import APNs
import HeraldCore
import Store

/// A campaign's alert (a poster, a flash sale without a Live Activity, a
/// feedback prompt): its segment's devices, written in slices while the first
/// are sent, by spans unless it is paced; each device's payload from the
/// campaign's text, with its reply token and sealed fields.
struct AlertPlan: CampaignPlanKind {
    let due: DueCampaign
    let prepared: PreparedCampaign

    static func plan(for due: DueCampaign, prepared: PreparedCampaign) -> AlertPlan? {
        AlertPlan(due: due, prepared: prepared)
    }

    var claimToken: ClaimToken { .device }

    /// A paced campaign takes its slots row by row.
    var sendsBySpans: Bool { prepared.campaign.pace == nil }

    mutating func begin(in run: PlanContext) async throws -> PlanStart {
        PlanStart(followUps: try await WidgetPushPlan.make(for: prepared.campaign, in: run))
    }

    func snapshot(in run: PlanContext) async throws -> SnapshotResult? {
        try await Self.snapshot(due, spans: sendsBySpans, in: run)
    }

    func notification(for target: DeliveryTarget, apps: AppRoutes,
                      personalizer: any DeliveryPersonalizer) -> Result<APNsNotification, CampaignProblem> {
        Self.notification(prepared: prepared, target: target, apps: apps, personalizer: personalizer)
    }

    /// The next slice of the campaign's segment (`AudienceStore.snapshot`).
    static func snapshot(_ due: DueCampaign, spans: Bool, in run: PlanContext) async throws -> SnapshotResult {
        let (audience, options) = (run.stores.audience, run.options)
        return try await run.db("snapshot the audience") {
            try await audience.snapshot(due, start: !options.dryRun, firstSlice: options.firstSnapshotSlice,
                                        spans: options.spans && spans)
        }
    }

    /// A campaign's alert for one device: its payload (with the reply token
    /// and sealed fields) and headers, as a run and a test send build it.
    static func notification(prepared: PreparedCampaign, target: DeliveryTarget, apps: AppRoutes,
                             personalizer: any DeliveryPersonalizer) -> Result<APNsNotification, CampaignProblem> {
        let parts: PayloadBuilder.Parts
        do {
            parts = try prepared.builder.parts(for: target)
        } catch {
            return .failure(CampaignProblem(error.description))
        }
        return personalizer.extras(for: prepared, target: target, sealing: parts.sensitive).flatMap { extras in
            let payload = prepared.builder.payload(parts, for: target, replyToken: extras.replyToken, sealed: extras.sealed)
            // Only a template's text can make one device's payload larger
            // than the campaign's checked bound: that device alone is skipped.
            guard payload.count <= PayloadBuilder.maxBytes else {
                return .failure(CampaignProblem(PayloadBuilder.tooLarge))
            }
            let headers = prepared.builder.headers(for: target, topic: apps.topic(app: target.app))
            return .success(APNsNotification(
                deviceToken: target.deviceToken, environment: target.environment,
                pushType: headers.pushType, priority: headers.priority, expiration: headers.expiration,
                collapseID: headers.collapseID, apnsID: headers.apnsID, topic: headers.topic, payload: payload,
                credential: apps.credential(app: target.app, environment: target.environment)))
        }
    }
}
