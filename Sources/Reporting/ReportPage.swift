import Foundation

/// Renders `ReportData` as one self-contained HTML page: inline CSS and SVG
/// charts, a few lines of inline script for the feedback search, nothing
/// fetched from the network. Every text from the database is escaped.
public enum ReportPage {
    public static func html(_ data: ReportData) -> String {
        var out = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Herald report</title>
            <style>\(css)</style></head><body>
            <header><h1>Herald report</h1><p class="muted">\(data.campaigns.count) campaign\(data.campaigns.count == 1 ? "" : "s") · made \(escape(timestamp(data.generatedAt))) UTC from the analyst views</p></header>

            """
        if !data.apps.isEmpty { out += appsTable(data.apps) }
        if data.campaigns.isEmpty {
            out += "<p>No campaigns yet.</p>\n"
        }
        for c in data.campaigns {
            out += campaignSection(c)
        }
        for j in data.journeys {
            out += journeySection(j)
        }
        out += "<script>\(script)</script>\n</body></html>\n"
        return out
    }

    static func campaignSection(_ c: ReportData.Campaign) -> String {
        var s = "<section class=\"campaign\" id=\"campaign-\(c.id)\">\n"
        s += "<h2>\(escape(c.name)) <span class=\"tag\">\(escape(c.kind))</span> <span class=\"tag status-\(escape(c.status))\">\(escape(c.status))</span></h2>\n"
        var facts = ["campaign \(c.id)"]
        if let sendAt = c.sendAt { facts.append("sends from \(timestamp(sendAt)) UTC") }
        if let rate = c.responseRatePct { facts.append(String(format: "%.1f%% of sent devices answered", rate)) }
        if let (series, n) = c.occurrenceOf { facts.append("occurrence #\(n) of campaign \(series)") }
        if let pace = c.pace { facts.append(pace.text) }
        if let median = c.arrivalMedian, let p90 = c.arrivalP90 {
            facts.append(String(format: "arrived %.1f s after sending (median), %.1f s (p90)", median, p90))
        }
        s += "<p class=\"muted\">\(escape(facts.joined(separator: " · ")))</p>\n"
        if let series = c.series {
            s += occurrencesTable(series, c.occurrences)
            s += "</section>\n"
            return s
        }
        if let reason = c.failureReason, !reason.isEmpty {
            s += "<p class=\"problem\">\(escape(reason))</p>\n"
        }
        s += "<div class=\"grid\">\n"
        s += "<figure><figcaption>Delivery funnel</figcaption>\n\(funnelChart(c))</figure>\n"
        s += "<figure><figcaption>Replies by action</figcaption>\n\(actionChart(c.actions))</figure>\n"
        s += "</div>\n"
        if let sale = c.sale { s += saleSteps(sale) }
        s += liftSection(c.lift)
        s += variantsSection(c.variants)
        s += "<figure><figcaption>Replies over time (UTC)</figcaption>\n\(timelineChart(c.timeline))</figure>\n"
        s += feedbackTable(c)
        s += "</section>\n"
        return s
    }

    /// Did it work? The campaign (and each variant) against its holdout.
    static func liftSection(_ lift: [ReportData.Lift]) -> String {
        guard let first = lift.first else { return "" }
        var s = "<h3>Did it work? \(escape(first.event)) against the held out</h3>\n"
        s += "<p class=\"muted\">Conversion rate of the users assigned to be sent it (whether or not it arrived) and of those held out, within the attribution window; the interval is 95%.</p>\n"
        s += "<table><thead><tr><th></th><th>Treated</th><th>Held out</th><th>Lift (points)</th><th>95% interval</th><th>Verdict</th></tr></thead><tbody>\n"
        for l in lift {
            s += "<tr><td>\(escape(l.variant.map { "variant \($0)" } ?? "whole campaign"))</td>"
            s += String(format: "<td class=\"n\">%.1f%% of %lld</td><td class=\"n\">%.1f%% of %lld</td><td class=\"n\">%+.2f</td><td class=\"n\">%.2f to %.2f</td>",
                        l.treatedRatePct, l.treated, l.heldOutRatePct, l.heldOut, l.liftPts, l.lowPts, l.highPts)
            s += "<td>\(escape(l.verdict))</td></tr>\n"
        }
        return s + "</tbody></table>\n"
    }

    /// A series' occurrences, one row each (each has its own section below).
    /// The deployment's apps side by side (analyst.apps).
    static func appsTable(_ apps: [ReportData.App]) -> String {
        var s = "<section><h2>Apps</h2>\n<table><thead><tr><th>App</th><th>Topic</th><th>Devices</th><th>Sent</th><th>Failed</th><th>Delivered</th><th>Replied to</th></tr></thead><tbody>\n"
        for a in apps {
            s += "<tr><td>\(escape(a.displayName)) <span class=\"muted\">\(escape(a.name))</span></td><td>\(escape(a.topic))</td><td class=\"n\">\(a.devices)</td><td class=\"n\">\(a.sent)</td><td class=\"n\">\(a.failed)</td><td class=\"n\">\(a.delivered)</td><td class=\"n\">\(a.replied)</td></tr>\n"
        }
        return s + "</tbody></table></section>\n"
    }

    static func occurrencesTable(_ series: String, _ occurrences: [ReportData.Occurrence]) -> String {
        var s = "<p>\(escape(series)): never sent itself; \(occurrences.count) occurrence\(occurrences.count == 1 ? "" : "s"), each a campaign of its own.</p>\n"
        guard !occurrences.isEmpty else { return s }
        s += "<table><thead><tr><th>#</th><th>Campaign</th><th>Sent from (UTC)</th><th>Status</th><th>Targeted</th><th>Sent</th><th>Replies</th><th>Answered</th></tr></thead><tbody>\n"
        for o in occurrences {
            let rate = o.responseRatePct.map { String(format: "%.1f%%", $0) } ?? "–"
            s += "<tr><td>\(o.number)</td><td><a href=\"#campaign-\(o.campaignID)\">\(o.campaignID)</a></td><td>\(escape(timestamp(o.sendAt)))</td><td>\(escape(o.status))</td><td class=\"n\">\(o.targeted)</td><td class=\"n\">\(o.sent)</td><td class=\"n\">\(o.replies)</td><td class=\"n\">\(rate)</td></tr>\n"
        }
        s += "</tbody></table>\n"
        return s
    }

    /// A sale's steps under it: what each sent, and what the activities confirmed.
    static func saleSteps(_ sale: ReportData.Sale) -> String {
        var s = "<h3>Live Activity</h3>\n<p class=\"muted\">Its pushes send no receipt: an activity confirms the start by registering, and each step by the step it shows (the activity endpoints). \(sale.activities) activities: \(sale.startedByPush) started by the push, \(sale.startedByApp) by the app\(sale.channels > 0 ? ", \(sale.onChannel) on \(sale.channels) broadcast channel\(sale.channels == 1 ? "" : "s")" : "").</p>\n"
        guard !sale.steps.isEmpty else { return s }
        s += "<table><thead><tr><th>Step</th><th>Due (UTC)</th><th>Status</th><th>Sent</th><th>Broadcasts</th><th>Superseded</th><th>Confirmed</th></tr></thead><tbody>\n"
        for st in sale.steps {
            s += "<tr><td>\(st.step)</td><td>\(escape(timestamp(st.dueAt)))</td><td>\(escape(st.status))</td><td class=\"n\">\(st.sent)</td><td class=\"n\">\(st.broadcastsSent)</td><td class=\"n\">\(st.expired)</td><td class=\"n\">\(st.confirmed)</td></tr>\n"
        }
        return s + "</tbody></table>\n"
    }

    /// The longest label a bar chart shows whole.
    static let barLabelLength = 22

    /// One bar a stage, scaled to the audience. A sale's pushes send no receipt: its bar of
    /// what arrived is what the activities confirmed.
    static func funnelChart(_ c: ReportData.Campaign) -> String {
        var rows: [(String, Int64, String)] = [
            ("Targeted", c.targeted, "bar-total"), ("Sent (APNs accepted)", c.sent, "bar-good"),
            c.sale.map { ("Activities confirmed", $0.activities, "bar-good") } ?? ("Delivered (confirmed)", c.delivered, "bar-good"),
            ("Answered (devices)", c.respondingDevices, "bar-good"),
        ]
        for (label, n) in [("Pending", c.pending), ("Skipped", c.skipped), ("Invalid", c.invalid),
                           ("Failed", c.failed), ("Expired", c.expired), ("Cancelled", c.cancelled)] where n > 0 {
            rows.append((label, n, "bar-other"))
        }
        return bars(rows.map { ($0.0, $0.1, String($0.1), $0.2) }, scale: max(c.targeted, 1))
    }

    static func actionChart(_ actions: [ReportData.Action]) -> String {
        guard !actions.isEmpty else { return "<p class=\"muted\">No replies yet.</p>" }
        let top = actions.map(\.replies).max() ?? 1
        return bars(actions.map { ($0.title, $0.replies, "\($0.replies) (\(String(format: "%.0f", $0.sharePct))%)", "bar-good") },
                    scale: max(top, 1))
    }

    /// Horizontal bars in an SVG that scales with the page width.
    static func bars(_ rows: [(label: String, value: Int64, text: String, cls: String)], scale: Int64) -> String {
        let rowHeight = 26, labelWidth = 150, barWidth = 250, width = 480
        let height = rows.count * rowHeight + 4
        var svg = "<svg viewBox=\"0 0 \(width) \(height)\" role=\"img\" class=\"chart\">"
        for (i, row) in rows.enumerated() {
            let y = i * rowHeight + 2
            let w = Int((Double(row.value) / Double(scale) * Double(barWidth)).rounded())
            svg += "<text x=\"0\" y=\"\(y + 17)\">\(escape(truncated(row.label, barLabelLength)))</text>"
            svg += "<rect class=\"\(row.cls)\" x=\"\(labelWidth)\" y=\"\(y + 3)\" width=\"\(max(w, row.value > 0 ? 1 : 0))\" height=\"18\" rx=\"3\"><title>\(escape(row.label)): \(escape(row.text))</title></rect>"
            svg += "<text x=\"\(labelWidth + max(w, 0) + 6)\" y=\"\(y + 17)\" class=\"num\">\(escape(row.text))</text>"
        }
        return svg + "</svg>"
    }

    /// The variants side by side: each one's response rate with its 95%
    /// interval, then a card per variant (figures, actions, the comparison
    /// with the baseline in words). Nothing when the campaign has none.
    static func variantsSection(_ variants: [ReportData.Variant]) -> String {
        guard let first = variants.first else { return "" }
        var s = "<h3>Variants</h3>\n"
        let alpha = first.alpha
        let level = alpha < 0.05 ? String(format: "p &lt; %.3g (5%% split over %d comparisons)", alpha, Int(first.variants - 1))
                                 : "p &lt; 0.05"
        s += "<p class=\"muted\">Each device got one variant, by a stable hash of campaign and device. Response rate: devices that answered ÷ devices sent. Each variant is compared with \(escape(first.name)) by a two-proportion z-test; significant means \(level).</p>\n"
        s += "<figure><figcaption>Response rate by variant (bars: 95% interval)</figcaption>\n\(rateChart(variants))</figure>\n"
        s += "<div class=\"variants\">\n"
        for v in variants {
            s += "<div class=\"variant\">"
            s += "<h4>\(escape(v.name)) <span class=\"tag\">\(v.sharePct)%</span></h4>"
            let got = v.targetedPct.map { String(format: "%.1f%%", $0) } ?? "–"
            s += "<p class=\"muted\">share \(v.sharePct)% · got \(got) of the audience</p>"
            s += "<p class=\"rate\">\(v.responseRatePct.map { String(format: "%.1f%%", $0) } ?? "–")<span class=\"muted\"> answered</span></p>"
            s += "<table class=\"figures\"><tbody>"
            for (label, n) in [("Targeted", v.targeted), ("Sent", v.sent), ("Answered (devices)", v.respondingDevices),
                               ("Opened", v.opened), ("Dismissed", v.dismissed), ("Replies", v.replies)] {
                s += "<tr><td>\(label)</td><td class=\"n\">\(n)</td></tr>"
            }
            s += "</tbody></table>"
            if !v.actions.isEmpty {
                // Replies by action: a bar a row, as wide as its share of the variant's replies.
                s += "<table class=\"figures actions\"><tbody>"
                for a in v.actions {
                    s += "<tr><td>\(escape(truncated(a.title, 22)))</td>"
                    s += String(format: "<td class=\"bar\"><span style=\"width:%.0f%%\"></span></td>", min(max(a.sharePct, 0), 100))
                    s += String(format: "<td class=\"n\">%d (%.0f%%)</td></tr>", a.replies, a.sharePct)
                }
                s += "</tbody></table>"
            }
            let cls = v.position == 1 ? "verdict base" : ((v.pValue ?? 1) < v.alpha ? "verdict sig" : "verdict")
            var detail = ""
            if v.position > 1, let z = v.z, let rate = v.responseRatePct, let base = first.responseRatePct {
                detail = String(format: "%+.1f points vs ", rate - base) + escape(v.baseline) + String(format: ", z = %.2f · ", z)
            }
            s += "<p class=\"\(cls)\">\(detail)\(escape(v.verdict))</p>"
            s += "</div>\n"
        }
        s += "</div>\n"
        return s
    }

    /// One bar a variant: its response rate, with the 95% interval
    /// (p ± 1.96·√(p(1−p)/n)) as a whisker.
    static func rateChart(_ variants: [ReportData.Variant]) -> String {
        let rowHeight = 30, labelWidth = 110, barWidth = 440, width = 720
        let height = variants.count * rowHeight + 4
        func interval(_ v: ReportData.Variant) -> (Double, Double, Double) {
            guard v.sent > 0 else { return (0, 0, 0) }
            let p = Double(v.respondingDevices) / Double(v.sent)
            let half = 1.96 * (p * (1 - p) / Double(v.sent)).squareRoot()
            return (p, max(0, p - half), min(1, p + half))
        }
        let top = max(variants.map { interval($0).2 }.max() ?? 0, 0.01)
        var svg = "<svg viewBox=\"0 0 \(width) \(height)\" role=\"img\" class=\"chart rates\">"
        for (i, v) in variants.enumerated() {
            let y = i * rowHeight + 2
            let (p, lo, hi) = interval(v)
            let w = p / top * Double(barWidth)
            svg += "<text x=\"0\" y=\"\(y + 19)\">\(escape(truncated(v.name, 16)))</text>"
            svg += "<rect class=\"\(v.position == 1 ? "bar-total" : "bar-good")\" x=\"\(labelWidth)\" y=\"\(y + 4)\" "
                + String(format: "width=\"%.1f\"", max(w, v.sent > 0 ? 1 : 0)) + " height=\"20\" rx=\"3\">"
            svg += "<title>\(escape(v.name)): \(String(format: "%.1f%% (95%%: %.1f–%.1f%%)", p * 100, lo * 100, hi * 100))</title></rect>"
            if v.sent > 0 {
                let x1 = Double(labelWidth) + lo / top * Double(barWidth)
                let x2 = Double(labelWidth) + hi / top * Double(barWidth)
                svg += String(format: "<line class=\"ci\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", x1, y + 14, x2, y + 14)
                svg += String(format: "<line class=\"ci\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", x1, y + 8, x1, y + 20)
                svg += String(format: "<line class=\"ci\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", x2, y + 8, x2, y + 20)
            }
            let label = v.sent > 0 ? String(format: "%.1f%% of %d", p * 100, v.sent) : "nothing sent"
            svg += "<text x=\"\(labelWidth + barWidth + 8)\" y=\"\(y + 19)\" class=\"num\">\(label)</text>"
        }
        return svg + "</svg>"
    }

    /// The column widths the timeline picks from: the smallest that fits the
    /// replies' span into at most 72 columns.
    static let timelineSteps: [(seconds: TimeInterval, name: String)] = [
        (60, "minute"), (300, "5 minutes"), (900, "15 minutes"), (3600, "hour"),
        (3 * 3600, "3 hours"), (6 * 3600, "6 hours"), (86400, "day"), (7 * 86400, "week"),
    ]

    /// Replies per column of time, gaps filled with zero.
    static func timelineChart(_ timeline: [ReportData.Bucket]) -> String {
        guard let first = timeline.first?.minute, let last = timeline.last?.minute else {
            return "<p class=\"muted\">No replies yet.</p>"
        }
        let span = last.timeIntervalSince(first)
        let step = timelineSteps.first { span / $0.seconds < 72 } ?? (30 * 86400, "month")
        let start = Date(timeIntervalSince1970: (first.timeIntervalSince1970 / step.seconds).rounded(.down) * step.seconds)
        var counts: [Int: Int64] = [:]
        for b in timeline {
            counts[Int(b.minute.timeIntervalSince(start) / step.seconds), default: 0] += b.replies
        }
        let slots = max((counts.keys.max() ?? 0) + 1, 12)
        let top = max(counts.values.max() ?? 1, 1)
        let width = 720, height = 170, left = 44, plotTop = 10, plotBottom = 142
        let slotWidth = Double(width - left) / Double(slots)
        var svg = "<svg viewBox=\"0 0 \(width) \(height)\" role=\"img\" class=\"chart timeline\">"
        svg += "<text x=\"\(left - 6)\" y=\"\(plotTop + 10)\" text-anchor=\"end\" class=\"num\">\(top)</text>"
        svg += "<text x=\"\(left - 6)\" y=\"\(plotBottom)\" text-anchor=\"end\" class=\"num\">0</text>"
        svg += "<line x1=\"\(left)\" y1=\"\(plotBottom)\" x2=\"\(width)\" y2=\"\(plotBottom)\" class=\"axis\"/>"
        for slot in 0..<slots {
            let n = counts[slot] ?? 0
            guard n > 0 else { continue }
            let h = Double(plotBottom - plotTop) * Double(n) / Double(top)
            let x = Double(left) + Double(slot) * slotWidth
            let at = start.addingTimeInterval(Double(slot) * step.seconds)
            svg += String(format: "<rect class=\"bar-good\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">",
                          x + 1, Double(plotBottom) - h, max(slotWidth - 2, 1), h)
            svg += "<title>\(escape(timestamp(at))): \(n)</title></rect>"
        }
        svg += "<text x=\"\(left)\" y=\"162\">\(escape(timestamp(start)))</text>"
        svg += "<text x=\"\(width)\" y=\"162\" text-anchor=\"end\" class=\"num\">one column a \(step.name)</text>"
        return svg + "</svg>"
    }

    static func feedbackTable(_ c: ReportData.Campaign) -> String {
        guard c.feedbackTotal > 0 else { return "" }
        var s = "<h3>What users typed</h3>\n"
        let shown = c.feedback.count
        let note = Int64(shown) < c.feedbackTotal ? "the \(shown) most recent of \(c.feedbackTotal)" : "all \(c.feedbackTotal)"
        s += "<input type=\"search\" class=\"filter\" data-table=\"feedback-\(c.id)\" placeholder=\"Search \(escape(note)) answers\" aria-label=\"Search the answers\">\n"
        s += "<table id=\"feedback-\(c.id)\"><thead><tr><th>When (UTC)</th><th>Locale</th><th>Answer</th></tr></thead><tbody>\n"
        for f in c.feedback {
            s += "<tr><td class=\"when\">\(escape(timestamp(f.occurredAt)))</td><td>\(escape(f.locale))</td><td>\(escape(f.text))</td></tr>\n"
        }
        s += "</tbody></table>\n"
        return s
    }

    /// Escapes text for HTML element content and quoted attribute values.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for ch in text.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters other than tab and newline have no place in a page.
                if ch.value < 0x20 && ch != "\t" && ch != "\n" || ch.value == 0x7F {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(ch)
                }
            }
        }
        return out
    }

    static func truncated(_ text: String, _ limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
    }

    static func timestamp(_ date: Date) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyy-MM-dd HH:mm"
        return f.string(from: date)
    }

    static let css = """
        body{font:15px/1.45 -apple-system,system-ui,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:60rem;padding:1rem;color:#1d1d1f;background:#fff}
        h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;margin:0 0 .2rem}h3{font-size:1rem;margin:1rem 0 .4rem}
        .muted{color:#6e6e73;margin:.2rem 0}.problem{color:#b3261e}
        .campaign{border-top:1px solid #d2d2d7;padding:1rem 0}
        .tag{font-size:.75rem;font-weight:500;background:#f2f2f7;border-radius:.6rem;padding:.1rem .5rem;vertical-align:middle}
        .status-failed,.status-cancelled{background:#fde7e9}.status-completed{background:#e3f5e1}.status-running{background:#e5f0ff}
        .grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(17rem,1fr));gap:1rem}
        figure{margin:.6rem 0}figcaption{font-weight:600;margin-bottom:.3rem}
        .chart{width:100%;height:auto;font-size:12px}.chart text{fill:#1d1d1f}.chart .num{fill:#6e6e73}
        .flow-edge{fill:none;stroke:#0a84ff;opacity:.75}.flow-goal{stroke:#34c759}.flow-timeout{stroke:#8e8e93}.flow-exited{stroke:#ff9f0a}
        .flow-head{fill:#6e6e73}.chart .flow-halo{fill:#fff;stroke:#fff;stroke-width:4px;stroke-linejoin:round}.flow-step{fill:#f2f2f7;stroke:#d2d2d7}.flow-out{fill:#fff;stroke:#d2d2d7;stroke-dasharray:4 3}
        .bar-total{fill:#8e8e93}.bar-good{fill:#0a84ff}.bar-other{fill:#ff9f0a}.axis{stroke:#d2d2d7}
        .filter{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem;border:1px solid #d2d2d7;border-radius:.4rem}
        table{border-collapse:collapse;width:100%;margin-top:.4rem}td,th{text-align:left;padding:.3rem .4rem;border-bottom:1px solid #f2f2f7;vertical-align:top}
        td.when{white-space:nowrap;color:#6e6e73}
        h4{margin:0 0 .2rem;font-size:1rem}.variants{display:grid;grid-template-columns:repeat(auto-fit,minmax(13rem,1fr));gap:.8rem}
        .variant{border:1px solid #d2d2d7;border-radius:.6rem;padding:.7rem}.rate{font-size:1.6rem;font-weight:600;margin:.2rem 0}
        .rate .muted{font-size:.9rem;font-weight:400}table.figures td{padding:.15rem .3rem}td.n{text-align:right;font-variant-numeric:tabular-nums}
        .verdict{margin:.5rem 0 0;padding:.4rem .5rem;border-radius:.4rem;background:#f2f2f7}.verdict.sig{background:#e3f5e1}.verdict.base{color:#6e6e73}
        .ci{stroke:#1d1d1f;stroke-width:1.5}table.actions{margin-top:.5rem;font-size:.85rem}td.bar{width:40%}td.n{white-space:nowrap}
        td.bar span{display:block;height:.8rem;border-radius:2px;background:#0a84ff;min-width:1px}
        @media (max-width:30rem){body{padding:.6rem}td.when{white-space:normal}.timeline{font-size:22px}.rates{font-size:20px}}
        """

    static let script = """
        document.querySelectorAll('input.filter').forEach(function(box){
          var rows=document.getElementById(box.dataset.table).tBodies[0].rows;
          box.addEventListener('input',function(){
            var q=box.value.toLowerCase();
            for(var i=0;i<rows.length;i++){rows[i].style.display=rows[i].textContent.toLowerCase().indexOf(q)<0?'none':'';}
          });
        });
        """
}
