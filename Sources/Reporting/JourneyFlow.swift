import Foundation

/// A journey drawn as a flow (analyst.journey_flow): its steps as boxes in columns, each
/// column one move further from where members enter, "out" last, and each edge members
/// took as an arrow whose width and label give how many took it.
enum JourneyFlow {
    /// Where each step's box goes: its column and its row within the column.
    struct Layout: Equatable {
        var column: [String: Int]
        var row: [String: Int]
        var columns: Int
        var rows: Int
    }

    /// Columns by the fewest moves from a step no edge leads to (where members enter), out
    /// of the journey in a column after every step; a step reached only through a loop goes
    /// after the others. Rows in the order the edges name the steps.
    static func layout(_ edges: [ReportData.Journey.Edge]) -> Layout {
        var order: [String] = []
        func note(_ step: String) { if !order.contains(step) { order.append(step) } }
        for e in edges {
            note(e.from)
            if !e.to.isEmpty { note(e.to) }
        }
        let targets = Set(edges.filter { !$0.to.isEmpty && $0.to != $0.from }.map(\.to))
        var column: [String: Int] = [:]
        var queue = order.filter { !targets.contains($0) }
        if queue.isEmpty, let first = order.first { queue = [first] }
        for s in queue { column[s] = 0 }
        var i = 0
        while i < queue.count {
            let s = queue[i]
            i += 1
            for e in edges where e.from == s && !e.to.isEmpty && column[e.to] == nil {
                column[e.to] = (column[s] ?? 0) + 1
                queue.append(e.to)
            }
        }
        let deepest = column.values.max() ?? 0
        for s in order where column[s] == nil { column[s] = deepest + 1 }
        let last = (column.values.max() ?? 0) + 1
        if edges.contains(where: { $0.to.isEmpty }) { column["out"] = last }
        var row: [String: Int] = [:]
        var filled: [Int: Int] = [:]
        for s in order + (column["out"] == nil ? [] : ["out"]) {
            let c = column[s] ?? 0
            row[s] = filled[c, default: 0]
            filled[c, default: 0] += 1
        }
        return Layout(column: column, row: row, columns: (column.values.max() ?? 0) + 1, rows: filled.values.max() ?? 1)
    }

    static let boxWidth = 130.0, boxHeight = 36.0, columnGap = 110.0, rowGap = 34.0

    /// The flow as an inline SVG, or nothing when no member moved yet.
    static func svg(_ journey: ReportData.Journey) -> String {
        let version = journey.flow.map(\.version).max() ?? 1
        let edges = journey.flow.filter { $0.version == version }
        guard !edges.isEmpty else { return "" }
        let layout = layout(edges)
        // Edges that pass over a column run in a gutter above the boxes, one lane each.
        let long = edges.filter { e in
            let (c1, c2) = (layout.column[e.from] ?? 0, layout.column[e.target] ?? 0)
            return c2 - c1 > 1 || (c2 <= c1 && e.from != e.target)
        }
        let top = 24 + Double(long.count) * 14
        let width = Double(layout.columns) * (boxWidth + columnGap) - columnGap + 20
        let height = top + Double(layout.rows) * (boxHeight + rowGap) - rowGap + 10
        let widest = Double(edges.map(\.members).max() ?? 1)
        func origin(_ step: String) -> (x: Double, y: Double) {
            (10 + Double(layout.column[step] ?? 0) * (boxWidth + columnGap),
             top + Double(layout.row[step] ?? 0) * (boxHeight + rowGap))
        }
        let label = "The flow of \(journey.name): each arrow an edge members took, its width and number how many"
        var s = "<svg class=\"chart flow\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(ReportPage.escape(label))\">\n"
        s += "<defs><marker id=\"arrow-\(journey.id)\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"9\" markerHeight=\"9\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" class=\"flow-head\"/></marker></defs>\n"
        // Arrows first, under the boxes; edges between the same two steps bow apart.
        var seen: [String: Int] = [:]
        var lane = 0
        for e in edges {
            let key = "\(e.from)>\(e.target)"
            let k = seen[key, default: 0]
            seen[key] = k + 1
            let (a, b) = (origin(e.from), origin(e.target))
            let stroke = 1.5 + 6 * Double(e.members) / max(widest, 1)
            var d: String, lx: Double, ly: Double
            if e.from == e.target {
                // A loop: out of the box's top and back into it.
                let (x, y) = (a.x + boxWidth / 2, a.y)
                d = "M\(f(x - 20)),\(f(y)) C\(f(x - 40)),\(f(y - 30)) \(f(x + 40)),\(f(y - 30)) \(f(x + 20)),\(f(y))"
                (lx, ly) = (x, y - 26)
            } else if long.contains(e) {
                let y = 16 + Double(lane) * 14
                lane += 1
                let (x1, y1) = (a.x + boxWidth / 2, a.y)
                let (x2, y2) = (b.x + boxWidth / 2, b.y)
                d = "M\(f(x1)),\(f(y1)) L\(f(x1)),\(f(y + 6)) Q\(f(x1)),\(f(y)) \(f(x1 + 6)),\(f(y)) L\(f(x2 - 6)),\(f(y)) Q\(f(x2)),\(f(y)) \(f(x2)),\(f(y + 6)) L\(f(x2)),\(f(y2))"
                (lx, ly) = ((x1 + x2) / 2, y - 3)
            } else {
                let bow = Double(k) * 18
                let (x1, y1) = (a.x + boxWidth, a.y + boxHeight / 2)
                let (x2, y2) = (b.x, b.y + boxHeight / 2)
                d = "M\(f(x1)),\(f(y1)) C\(f(x1 + 45)),\(f(y1 + bow)) \(f(x2 - 45)),\(f(y2 + bow)) \(f(x2)),\(f(y2))"
                (lx, ly) = (x1 + (x2 - x1) * 0.45, y1 + (y2 - y1) * 0.45 + bow * 0.75 - 5)
            }
            s += "<path d=\"\(d)\" class=\"flow-edge flow-\(ReportPage.escape(e.kind))\" stroke-width=\"\(f(stroke))\" marker-end=\"url(#arrow-\(journey.id))\"><title>\(ReportPage.escape("\(e.from) → \(e.target) by \(e.kind): \(e.members)"))</title></path>\n"
            // A white halo under the label keeps it legible over the arrows.
            let text = "\(ReportPage.escape(e.kind)) \(e.members)"
            s += "<text x=\"\(f(lx))\" y=\"\(f(ly))\" text-anchor=\"middle\" class=\"flow-halo\" aria-hidden=\"true\">\(text)</text>"
            s += "<text x=\"\(f(lx))\" y=\"\(f(ly))\" text-anchor=\"middle\" class=\"num\">\(text)</text>\n"
        }
        let at = Dictionary(journey.steps.filter { $0.version == version }.map { ($0.step, $0) }, uniquingKeysWith: { a, _ in a })
        for step in layout.row.keys.sorted() {
            let o = origin(step)
            let cls = step == "out" ? "flow-out" : "flow-step"
            s += "<rect x=\"\(f(o.x))\" y=\"\(f(o.y))\" width=\"\(Int(boxWidth))\" height=\"\(Int(boxHeight))\" rx=\"8\" class=\"\(cls)\"/>\n"
            let here = at[step].map(\.active) ?? 0
            s += "<text x=\"\(f(o.x + boxWidth / 2))\" y=\"\(f(o.y + (here > 0 ? 15 : 22)))\" text-anchor=\"middle\">\(ReportPage.escape(ReportPage.truncated(step, 18)))</text>\n"
            if let here = at[step], here.active > 0 {
                s += "<text x=\"\(f(o.x + boxWidth / 2))\" y=\"\(f(o.y + 29))\" text-anchor=\"middle\" class=\"num\">\(here.active) here</text>\n"
            }
        }
        return s + "</svg>\n"
    }

    private static func f(_ v: Double) -> String { String(format: "%.1f", v) }
}

extension ReportPage {
    /// One journey: its goal line, its flow drawn, and the edges' table.
    static func journeySection(_ j: ReportData.Journey) -> String {
        var s = "<section class=\"campaign\" id=\"journey-\(j.id)\">\n"
        s += "<h2>\(escape(j.name)) <span class=\"tag\">journey</span></h2>\n"
        var line = "\(j.entered) entered"
        if let event = j.goalEvent, let rate = j.goalRatePct {
            line += String(format: "; %d reached the goal (%@): %.1f%%", j.reachedGoal, escape(event), rate)
        }
        if let rate = j.heldOutRatePct {
            line += String(format: "; of %d held out at the entry, %d converted anyway (%.1f%%)", j.heldOut, j.heldOutConverted, rate)
        }
        s += "<p class=\"muted\">\(line)</p>\n"
        s += JourneyFlow.svg(j)
        guard !j.flow.isEmpty else { return s + "<p class=\"muted\">No member has moved yet.</p>\n</section>\n" }
        s += "<table><thead><tr><th>Version</th><th>From</th><th>Edge</th><th>To</th><th>Members</th></tr></thead><tbody>\n"
        for e in j.flow {
            s += "<tr><td class=\"n\">\(e.version)</td><td>\(escape(e.from))</td><td>\(escape(e.kind))</td><td>\(escape(e.target))</td><td class=\"n\">\(e.members)</td></tr>\n"
        }
        return s + "</tbody></table>\n</section>\n"
    }
}
