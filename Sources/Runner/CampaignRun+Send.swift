import Foundation
import HeraldCore
import Logging
import Store

extension CampaignRun {
    /// Claims, sends and records the campaign's queued deliveries through
    /// the sending engine until none is left (or a pause, cancel, expiry,
    /// stop or outage ends it), then completes the campaign when nothing of
    /// it is left.
    ///
    /// `snapshotting`, when the campaign's audience is still being written:
    /// sending waits for the next slice instead of ending.
    func send(_ plan: any CampaignPlan, summary: inout CampaignSummary, state: inout RunState,
              logger: Logger, snapshotting: SnapshotWriting? = nil) async throws {
        guard let transport else { return }
        let prepared = plan.prepared
        let source = CampaignClaims(ledger: stores.ledger, campaigns: stores.campaigns, db: db, plan: plan, runID: state.runID, options: options,
                                    personalizer: personalizer, snapshotting: snapshotting, writer: state.writer)
        let engine = SendingEngine(transport: transport, options: options, leases: state.leases, logger: logger,
                                   budget: state.budget)
        let clock = options.clock
        var progress = CampaignProgress(campaign: prepared.campaign.id,
                                        total: summary.snapshot.flatMap { $0.complete ? $0.queued : nil }, now: clock.now)
        defer { progress.finish() }
        let before = summary.sent + summary.invalid + summary.failed + summary.skipped
        var tally = SendTally()
        defer { summary.add(tally, into: &state.figures) }
        let finish = try await engine.send(source, breakers: state.breakers, tally: &tally) { sofar in
            progress.update(done: before + sofar.done, now: clock.now, logger: logger)
        }
        switch finish {
        case .done:
            let campaigns = stores.campaigns
            let id = prepared.campaign.id
            if try await db("complete the campaign", { try await campaigns.completeIfDone(id) }) {
                summary.completed = true
                logger.info("campaign completed")
            } else if let reason = try await refusedAppsReason(campaign: id, refused: state.breakers.snapshot.refusedApps) {
                try await fail(&summary, reason: reason, logger: logger)
            }
        case .paused:
            logger.notice("campaign paused; its queued deliveries wait")
        case .cancelled:
            logger.notice("campaign cancelled; its queued deliveries were cancelled")
        case .expired:
            logger.notice("campaign expired")
        case .stopped:
            state.interruption = .stopped
        case .outage(let why):
            logger.error("run stopped by an outage", metadata: ["reason": "\(why)"])
            state.interruption = .outage(why)
        }
    }
}

extension CampaignRun {
    /// Why the campaign fails when deliveries of apps whose credential APNs
    /// refused in this run are left queued (nil: none is). They stay queued:
    /// once a person fixed the credential, setting the campaign's status
    /// back to `running` sends them.
    func refusedAppsReason(campaign: Int64, refused: [String: AppRefusal]) async throws -> String? {
        guard !refused.isEmpty else { return nil }
        let ledger = stores.ledger
        let queued = try await db("count deliveries left queued") { try await ledger.queuedByApp(campaign: campaign) }
        let stuck = refused.compactMap { app, refusal in queued[app].flatMap { $0 > 0 ? (app, refusal, $0) : nil } }
            .sorted { $0.0 < $1.0 }
        guard !stuck.isEmpty else { return nil }
        let parts = stuck.map { app, r, waiting in
            "\(options.apps.describe(app: app, environment: r.environment)): APNs refused it (\(r.answer)); \(waiting) deliveries wait"
        }
        return parts.joined(separator: "; ")
            + ". Fix the credential (docs/operators.md, \"Apps and credentials\"), then UPDATE campaigns SET status = 'running' WHERE id = \(campaign);"
    }
}

extension CampaignSummary {
    mutating func add(_ tally: SendTally, into figures: inout RunFigures) {
        sent += tally.sent
        invalid += tally.invalid
        failed += tally.failed
        skipped += tally.skipped
        requeued += tally.requeued
        figures.sent += tally.sent
        figures.invalid += tally.invalid
        figures.failed += tally.failed
        figures.skipped += tally.skipped
        figures.requeued += tally.requeued
        figures.retried += tally.retried
    }
}
