import Foundation
import HeraldCore
import Logging
import Store

/// `herald preview --journey N`: a journey before (or while) it runs, written nowhere: its
/// graph in text, what each send step sends per locale, the problems it would be refused
/// for, where its members are, and the path a sample of them would take now, decided by
/// the run's own claim and `JourneyDecision` in a transaction rolled back.
public struct JourneyPreview: Sendable {
    public var data: JourneyPreviewData

    /// Whether it could run: no problem.
    public var canRun: Bool { data.problems.isEmpty }

    public static func make(client: Database, journey: Int64, logger: Logger) async throws -> JourneyPreview {
        let store = JourneyStore(client: client, logger: logger)
        return JourneyPreview(data: try await store.preview(journey: journey) { member, version, now in
            JourneyDecision.advance(member.facts, in: version.graph, now: now)
        })
    }

    public var text: String {
        let d = data
        var out = ["journey \(d.id) \"\(d.name)\" (\(d.status), version \(d.version)): entered by \(d.entry); reentry \(d.reentry)"
                   + (d.goal.map { "; goal \($0)" } ?? "") + (d.holdoutPct > 0 ? "; \(d.holdoutPct)% held out" : "") + "; apps: \(d.apps)"]
        out.append("steps, from \(d.firstStep):")
        for step in d.steps {
            var line = "  \(step.key): \(step.kind)"
            if let m = step.message { line += " campaign \(m.id) \"\(m.name)\" [\(m.kind)]" }
            if let wait = step.wait { line += " \(wait)" }
            if let timeout = step.timeout { line += " (timeout \(timeout))" }
            if let of = step.listensTo { line += ", listening to \(of)" }
            out.append(line)
            for t in step.texts { out.append("    \(t.locale): \(t.title) — \(t.body)") }
            for e in step.edges {
                let rule = e.rule == "{}" ? "" : " \(e.rule)"
                out.append("    \(e.position). \(e.kind)\(rule) → \(e.to ?? "out")")
            }
        }
        if d.problems.isEmpty {
            out.append("problems: none")
        } else {
            out.append("problems (it would be refused for these):")
            for p in d.problems { out.append("  " + (p.step.map { "step \($0): " } ?? "") + p.problem) }
        }
        var members = "members: \(d.entered) entered, \(d.left) left"
        if d.heldOut > 0 { members += ", \(d.heldOut) held out" }
        if !d.at.isEmpty {
            members += "; now " + d.at.map { "\($0.step) \($0.active)" + ($0.waiting > 0 ? " (\($0.waiting) waiting for an event)" : "") }
                .joined(separator: ", ")
        }
        out.append(members)
        if let note = d.samplesNote {
            out.append("sample paths: \(note)")
        } else {
            out.append("sample paths now (decided as a run would, written nowhere):")
            for s in d.samples { out.append("  \(s.user), at \(s.step): \(Self.describe(s.advance, now: d.now))") }
        }
        return out.joined(separator: "\n")
    }

    /// A decision in words: the moves, the sends, and where the member rests.
    static func describe(_ advance: JourneyAdvance, now: Date) -> String {
        var parts: [String] = []
        if !advance.moves.isEmpty {
            parts.append(advance.moves.map { "\($0.from) -\($0.kind)-> \($0.to ?? "out")" }.joined(separator: ", "))
        }
        if !advance.sends.isEmpty { parts.append("sends " + advance.sends.joined(separator: ", ")) }
        switch advance.rest {
        case .at(let step, _, let due, let waiting):
            let when = due <= now ? "now" : "in " + Self.duration(due.timeIntervalSince(now))
            parts.append("rests at \(step), looked at again \(when)" + (waiting ? " or at an event of its user" : ""))
        case .left(.done): parts.append("leaves, done")
        case .left(.goal): parts.append("leaves at the goal")
        case .left(.stuck(let why)): parts.append("cannot go on: \(why)")
        }
        return parts.joined(separator: "; ")
    }

    static func duration(_ seconds: TimeInterval) -> String {
        let s = Int(seconds.rounded())
        if s >= 86_400 { return "\(s / 86_400) d \(s % 86_400 / 3600) h" }
        if s >= 3600 { return "\(s / 3600) h \(s % 3600 / 60) min" }
        if s >= 60 { return "\(s / 60) min" }
        return "\(s) s"
    }
}
