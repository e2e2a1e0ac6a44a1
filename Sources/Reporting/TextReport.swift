import Foundation

extension AnalystReport {
    /// The report as text for a terminal: one block per campaign (the
    /// funnel, replies by action, the variants, a few typed answers), then
    /// one per journey (its goal, and how many took each edge).
    public func render(campaign: Int64? = nil, samples: Int = 3) async throws -> String {
        TextReport.text(try await data(campaign: campaign, feedbackLimit: samples))
    }
}

/// Renders `ReportData` as text, one block per campaign.
public enum TextReport {
    public static func text(_ data: ReportData) -> String {
        var out: [String] = data.apps.map(\.text)
        for c in data.campaigns {
            var line = "campaign \(c.id) \"\(c.name)\" [\(c.kind)] \(c.status)"
            if let reason = c.failureReason, !reason.isEmpty { line += " (\(reason))" }
            if let (series, n) = c.occurrenceOf { line += " · occurrence #\(n) of campaign \(series)" }
            out.append(line)
            if let series = c.series {
                out.append("  \(series): \(c.occurrences.count) occurrence\(c.occurrences.count == 1 ? "" : "s")")
                for o in c.occurrences {
                    out.append("  #\(o.number) campaign \(o.campaignID) \(o.status): targeted \(o.targeted), sent \(o.sent), replies \(o.replies)")
                }
                continue
            }
            if let pace = c.pace { out.append("  \(pace.text)") }
            out.append(String(format: "  targeted %d  sent %d  invalid %d  failed %d  expired %d  skipped %d  pending %d  replies %d from %d devices (%.1f%% of sent)",
                              c.targeted, c.sent, c.invalid, c.failed, c.expired, c.skipped, c.pending, c.replies,
                              c.respondingDevices, c.responseRatePct ?? 0))
            if let sale = c.sale {
                // Its pushes send no receipt: the devices confirm through the activity endpoints.
                out.append("  start: \(sale.activities) activities confirmed of \(c.sent) sent, the alert to devices without a push-to-start token (\(sale.startedByPush) started by the push, \(sale.startedByApp) by the app\(sale.channels > 0 ? ", \(sale.onChannel) on \(sale.channels) channel\(sale.channels == 1 ? "" : "s")" : ""))")
                for step in sale.steps { out.append("  \(step.text)") }
            } else if c.sent > 0 {
                var line = String(format: "  delivered %d of %d sent (%.1f%%, confirmed by a receipt or a reply)",
                                  c.delivered, c.sent, 100 * Double(c.delivered) / Double(c.sent))
                if let median = c.arrivalMedian, let p90 = c.arrivalP90 {
                    line += String(format: "; arrived %.1f s after sending (median), %.1f s (90th percentile)", median, p90)
                }
                out.append(line)
            }
            for l in c.lift { out.append("  lift, \(l.text): \(l.verdict)") }
            let actions = c.actions.map { "\($0.title) \($0.replies) (" + String(format: "%.0f%%", $0.sharePct) + ")" }
            if !actions.isEmpty { out.append("  by action: " + actions.joined(separator: ", ")) }
            for v in c.variants {
                let rate = v.responseRatePct.map { String(format: "%.1f%%", $0) } ?? "–"
                var line = "  variant \(v.name) (\(v.sharePct)%): sent \(v.sent), answered \(v.respondingDevices) (\(rate)), opened \(v.opened)"
                if v.position > 1, let z = v.z { line += "; vs \(v.baseline) " + String(format: "z = %.2f", z) }
                line += ": \(v.verdict)"
                out.append(line)
            }
            for f in c.feedback { out.append("  feedback [\(f.locale)]: \(f.text)") }
        }
        if data.campaigns.isEmpty { out.append("no campaigns") }
        for j in data.journeys {
            out.append(j.text)
            for e in j.flow {
                out.append("  \(e.from) → \(e.target) (\(e.kind)): \(e.members)")
            }
            for st in j.steps where st.active > 0 {
                out.append("  at \(st.step): \(st.active)" + (st.waiting > 0 ? " (\(st.waiting) waiting for an event)" : ""))
            }
        }
        return out.joined(separator: "\n")
    }
}
