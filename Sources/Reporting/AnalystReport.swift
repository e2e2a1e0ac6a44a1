import Foundation
import Logging
import PostgresNIO
import Store

/// The analyst views read back for a person: `herald report` (text or
/// HTML), the end of the demo. Reads the analyst views only (so a member of
/// `herald_analyst` can make it), one query per view for every campaign.
public struct AnalystReport: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The report's figures: every campaign, or only `campaign`; at most
    /// `feedbackLimit` typed answers per campaign, newest first.
    public func data(campaign: Int64? = nil, feedbackLimit: Int = 500, now: Date = Date()) async throws -> ReportData {
        var campaigns: [ReportData.Campaign] = []
        let funnel = try await client.query(try Self.statement("campaign-funnel", campaign: campaign), logger: logger)
        for try await row in funnel {
            let r = row.makeRandomAccess()
            var c = ReportData.Campaign(
                id: try r[0].decode(Int64.self), name: try r[1].decode(String.self),
                kind: try r[2].decode(String.self), status: try r[3].decode(String.self))
            c.failureReason = try r[4].decode(String?.self)
            c.sendAt = try r[5].decode(Date?.self)
            c.targeted = try r[6].decode(Int64.self)
            c.sent = try r[7].decode(Int64.self)
            c.invalid = try r[8].decode(Int64.self)
            c.failed = try r[9].decode(Int64.self)
            c.expired = try r[10].decode(Int64.self)
            c.skipped = try r[11].decode(Int64.self)
            c.cancelled = try r[12].decode(Int64.self)
            c.pending = try r[13].decode(Int64.self)
            c.replies = try r[14].decode(Int64.self)
            c.respondingDevices = try r[15].decode(Int64.self)
            c.responseRatePct = try r[16].decode(Double?.self)
            campaigns.append(c)
        }
        guard !campaigns.isEmpty else {
            var data = ReportData(generatedAt: now, campaigns: [])
            if campaign == nil { data.journeys = try await journeys() }
            return data
        }
        var index: [Int64: Int] = [:]
        for (i, c) in campaigns.enumerated() { index[c.id] = i }

        for try await (id, action, title, n, share) in try await client.query(
            try Self.statement("action-breakdown", campaign: campaign), logger: logger
        ).decode((Int64, String, String, Int64, Double).self) {
            guard let i = index[id] else { continue }
            campaigns[i].actions.append(.init(action: action, title: title, replies: n, sharePct: share))
        }
        for try await (id, minute, n) in try await client.query(
            try Self.statement("replies-over-time", campaign: campaign), logger: logger
        ).decode((Int64, Date, Int64).self) {
            guard let i = index[id] else { continue }
            campaigns[i].timeline.append(.init(minute: minute, replies: n))
        }
        let feedback = try SQLQueries.named("reports/feedback-text").query([
            "campaign": .value(campaign), "feedback_limit": .value(feedbackLimit),
        ])
        for try await (id, text, locale, at, total) in try await client.query(feedback, logger: logger)
            .decode((Int64, String, String, Date, Int64).self) {
            guard let i = index[id] else { continue }
            campaigns[i].feedback.append(.init(text: text, locale: locale, occurredAt: at))
            campaigns[i].feedbackTotal = total
        }
        for (id, variants) in try await variantsByCampaign(campaign) {
            guard let i = index[id] else { continue }
            campaigns[i].variants = variants
        }
        try await addSeries(to: &campaigns, index: index, campaign: campaign)
        for try await row in try await client.query(try Self.statement("lift", campaign: campaign), logger: logger) {
            let (id, variant, event, n1, r1, n0, r0, lift, low, high, p, verdict) = try row.decode(
                (Int64, String?, String, Int64, Double, Int64, Double, Double, Double, Double, Double?, String).self)
            guard let i = index[id] else { continue }
            campaigns[i].lift.append(.init(variant: variant, event: event, treated: n1, treatedRatePct: r1, heldOut: n0,
                                           heldOutRatePct: r0, liftPts: lift, lowPts: low, highPts: high, pValue: p,
                                           verdict: verdict))
        }
        for try await (id, delivered, median, p90) in try await client.query(
            try Self.statement("delivery-confirmation", campaign: campaign), logger: logger
        ).decode((Int64, Int64, Double?, Double?).self) {
            guard let i = index[id] else { continue }
            (campaigns[i].delivered, campaigns[i].arrivalMedian, campaigns[i].arrivalP90) = (delivered, median, p90)
        }
        try await addSales(to: &campaigns, index: index, campaign: campaign)
        var data = ReportData(generatedAt: now, campaigns: campaigns)
        if campaign == nil {
            data.apps = try await apps()
            data.journeys = try await journeys()
        }
        return data
    }

    /// Every journey: its goal, where its members are, and how many took each edge.
    func journeys() async throws -> [ReportData.Journey] {
        var journeys: [ReportData.Journey] = []
        var index: [Int64: Int] = [:]
        for try await (id, name, event, entered, goal, heldOut, converted) in try await client.query(
            try SQLQueries.named("reports/journey-goals").query([:]), logger: logger
        ).decode((Int64, String, String?, Int64, Int64, Int64, Int64).self) {
            index[id] = journeys.count
            journeys.append(.init(id: id, name: name, goalEvent: event, entered: entered, reachedGoal: goal,
                                  heldOut: heldOut, heldOutConverted: converted))
        }
        for try await (id, version, step, active, waiting, done, goal, exited) in try await client.query(
            try SQLQueries.named("reports/journey-steps").query([:]), logger: logger
        ).decode((Int64, Int32, String, Int64, Int64, Int64, Int64, Int64).self) {
            guard let i = index[id] else { continue }
            journeys[i].steps.append(.init(version: version, step: step, active: active, waiting: waiting, done: done,
                                           goal: goal, exited: exited))
        }
        for try await (id, version, from, position, kind, to, members) in try await client.query(
            try SQLQueries.named("reports/journey-flow").query([:]), logger: logger
        ).decode((Int64, Int32, String, Int32, String, String, Int64).self) {
            guard let i = index[id] else { continue }
            journeys[i].flow.append(.init(version: version, from: from, position: position, kind: kind, to: to, members: members))
        }
        return journeys
    }

    /// The report's statement `name` (`Sql/queries/reports.sql`) for every campaign, or only `campaign`.
    private static func statement(_ name: String, campaign: Int64?) throws(StoreError) -> PostgresQuery {
        try SQLQueries.named("reports/\(name)").query(["campaign": .value(campaign)])
    }

    /// The apps' figures (`analyst.apps`), when there is more than one app.
    func apps() async throws -> [ReportData.App] {
        var apps: [ReportData.App] = []
        for try await (name, display, topic, devices, sent, failed, delivered, replied) in try await client.query(
            try SQLQueries.named("reports/apps").query([:]), logger: logger
        ).decode((String, String, String, Int64, Int64, Int64, Int64, Int64).self) {
            apps.append(.init(name: name, displayName: display, topic: topic, devices: devices, sent: sent, failed: failed,
                              delivered: delivered, replied: replied))
        }
        return apps.count > 1 ? apps : []
    }

    /// Series and their occurrences (`analyst.series`, `analyst.occurrences`)
    /// and paced campaigns' pace (`analyst.pace`).
    private func addSeries(to campaigns: inout [ReportData.Campaign], index: [Int64: Int], campaign: Int64?) async throws {
        for try await (id, kind, unit, every) in try await client.query(
            try Self.statement("series", campaign: campaign), logger: logger
        ).decode((Int64, String, String?, Int32).self) {
            guard let i = index[id] else { continue }
            campaigns[i].series = unit.map { every == 1 ? "recurring every \($0)" : "recurring every \(every) \($0)s" } ?? "sent \(kind)"
        }
        for try await row in try await client.query(try Self.statement("occurrences", campaign: campaign), logger: logger) {
            let (series, n, id, status, at, targeted, sent, replies, rate) = try row.decode(
                (Int64, Int32, Int64, String, Date, Int64, Int64, Int64, Double?).self)
            if let i = index[series] {
                campaigns[i].occurrences.append(.init(number: Int(n), campaignID: id, status: status, sendAt: at,
                                                      targeted: targeted, sent: sent, replies: replies, responseRatePct: rate))
            }
            if let i = index[id] { campaigns[i].occurrenceOf = (series, Int(n)) }
        }
        for try await (id, set, achieved, busiest) in try await client.query(
            try Self.statement("pace", campaign: campaign), logger: logger
        ).decode((Int64, Double?, Double?, Int64?).self) {
            guard let i = index[id], let set else { continue }
            campaigns[i].pace = .init(setPerMinute: set, achievedPerMinute: achieved, busiestMinute: busiest)
        }
    }

    /// Live Activity sales' activities and steps (`analyst.live_activities`,
    /// `analyst.live_activity_steps`): a step is under its sale, not a campaign of its own.
    private func addSales(to campaigns: inout [ReportData.Campaign], index: [Int64: Int], campaign: Int64?) async throws {
        for try await (id, push, app, channel, channels) in try await client.query(
            try Self.statement("live-activities", campaign: campaign), logger: logger
        ).decode((Int64, Int64, Int64, Int64, Int64).self) {
            guard let i = index[id] else { continue }
            var sale = ReportData.Sale()
            (sale.startedByPush, sale.startedByApp, sale.onChannel, sale.channels) = (push, app, channel, channels)
            campaigns[i].sale = sale
        }
        for try await row in try await client.query(try Self.statement("live-activity-steps", campaign: campaign),
                                                    logger: logger) {
            let r = row.makeRandomAccess()
            guard let i = index[try r[0].decode(Int64.self)], campaigns[i].sale != nil else { continue }
            var step = ReportData.SaleStep(step: Int(try r[1].decode(Int32.self)), campaignID: try r[2].decode(Int64.self),
                                           dueAt: try r[3].decode(Date.self), status: try r[4].decode(String.self))
            step.targeted = try r[5].decode(Int64.self)
            step.sent = try r[6].decode(Int64.self)
            step.expired = try r[7].decode(Int64.self)
            step.skipped = try r[8].decode(Int64.self)
            step.confirmed = try r[9].decode(Int64.self)
            step.broadcastsSent = try r[10].decode(Int64.self)
            step.broadcastsNotSent = try r[11].decode(Int64.self)
            campaigns[i].sale?.steps.append(step)
        }
    }

    /// A campaign's variants side by side, baseline first.
    public func variants(campaign id: Int64) async throws -> [ReportData.Variant] {
        try await variantsByCampaign(id)[id] ?? []
    }

    /// The variants of every campaign (or only `campaign`), from
    /// `analyst.variant_comparison` and `analyst.variant_actions`.
    private func variantsByCampaign(_ campaign: Int64?) async throws -> [Int64: [ReportData.Variant]] {
        var out: [Int64: [ReportData.Variant]] = [:]
        let rows = try await client.query(try Self.statement("variant-comparison", campaign: campaign), logger: logger)
        for try await row in rows {
            let r = row.makeRandomAccess()
            var v = ReportData.Variant(name: try r[1].decode(String.self), position: try r[2].decode(Int64.self),
                                       variants: try r[3].decode(Int64.self), sharePct: try r[4].decode(Int32.self),
                                       baseline: try r[14].decode(String.self))
            v.targeted = try r[5].decode(Int64.self)
            v.targetedPct = try r[6].decode(Double?.self)
            v.sent = try r[7].decode(Int64.self)
            v.replies = try r[8].decode(Int64.self)
            v.respondingDevices = try r[9].decode(Int64.self)
            v.opened = try r[10].decode(Int64.self)
            v.dismissed = try r[11].decode(Int64.self)
            v.typedAnswers = try r[12].decode(Int64.self)
            v.responseRatePct = try r[13].decode(Double?.self)
            v.z = try r[15].decode(Double?.self)
            v.pValue = try r[16].decode(Double?.self)
            out[try r[0].decode(Int64.self), default: []].append(v)
        }
        guard !out.isEmpty else { return out }
        for try await (id, variant, action, title, n, share) in try await client.query(
            try Self.statement("variant-actions", campaign: campaign), logger: logger
        ).decode((Int64, String, String, String, Int64, Double).self) {
            guard let i = out[id]?.firstIndex(where: { $0.name == variant }) else { continue }
            out[id]?[i].actions.append(.init(action: action, title: title, replies: n, sharePct: share))
        }
        return out
    }
}
