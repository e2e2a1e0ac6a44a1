import Foundation

/// The decision of a journey's step (contract 11): given a member's facts, its journey's
/// graph and the time, the moves it takes and where it rests. No I/O: the run claims the
/// member and evaluates the edges' rules in SQL, then writes what this returns in one
/// transaction with the ledger rows of its sends.
public enum JourneyDecision {
    /// At most this many moves a member takes in one decision: the check refuses a loop with
    /// no wait in it, so this is only a guard; a member that reaches it rests, due now.
    public static let maxMoves = 32

    public static func advance(_ facts: JourneyMemberFacts, in graph: JourneyGraph, now: Date) -> JourneyAdvance {
        var out = JourneyAdvance(rest: .left(.done))
        if facts.goalReached {
            out.moves.append(JourneyMove(from: facts.step, position: nil, kind: "goal", to: nil))
            out.rest = .left(.goal)
            return out
        }
        var at = facts.step
        var reached = facts.reachedAt
        // The step the member was claimed at had its edges evaluated since it reached it; a
        // step reached in this decision has had no event yet.
        var arrived = false
        while true {
            guard let step = graph.steps[at] else {
                out.rest = .left(.stuck("step \(at) does not exist"))
                return out
            }
            let edges = graph.edges[at] ?? []
            var taken: JourneyEdge?
            switch step.kind {
            case .exit:
                out.rest = .left(.done)
                return out
            case .send:
                out.sends.append(at)
                taken = edges.first { $0.kind == .next }
            case .wait:
                let end = step.wait?.end(reached: reached, zone: facts.zone, bestHour: facts.bestHour)
                if let end, end > now {
                    out.rest = .at(step: at, reachedAt: reached, due: end, waiting: false)
                    return out
                }
                taken = edges.first { $0.kind == .next }
            case .waitFor:
                let timeout = reached.addingTimeInterval(step.timeout ?? 0)
                if !arrived {
                    taken = edges.first { $0.kind.heldBySQL && facts.holds.contains($0.id) }
                }
                if taken == nil {
                    guard timeout <= now else {
                        out.rest = .at(step: at, reachedAt: reached, due: timeout, waiting: true)
                        return out
                    }
                    taken = edges.first { $0.kind == .timeout }
                }
            case .branch, .split:
                taken = edges.first { $0.kind == .otherwise || ($0.kind.heldBySQL && facts.holds.contains($0.id)) }
            }
            guard let edge = taken else {
                out.rest = .left(.stuck("step \(at): no edge holds"))
                return out
            }
            out.moves.append(JourneyMove(from: at, position: edge.position, kind: edge.kind.rawValue, to: edge.to))
            guard let next = edge.to else {
                out.rest = .left(.done)
                return out
            }
            at = next
            reached = now
            arrived = true
            if out.moves.count >= maxMoves {
                out.rest = .at(step: at, reachedAt: reached, due: now, waiting: false)
                return out
            }
        }
    }
}
