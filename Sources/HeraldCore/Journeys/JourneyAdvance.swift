import Foundation

/// One move a member took (`journey_transitions`): from a step by an edge (its position; nil
/// for the goal, taken from anywhere) to a step, or out (nil).
public struct JourneyMove: Sendable, Hashable {
    public var from: String
    public var position: Int?
    public var kind: String
    public var to: String?

    public init(from: String, position: Int?, kind: String, to: String?) {
        self.from = from
        self.position = position
        self.kind = kind
        self.to = to
    }
}

/// How a member left a journey (`journey_members.state`, or why it could not go on).
public enum JourneyExit: Sendable, Hashable {
    /// It reached an exit, or an edge out.
    case done
    /// It reached the journey's goal.
    case goal
    /// No edge of its step held and none could wait: a graph the check should have refused.
    case stuck(String)
}

/// Where a member rests after a decision.
public enum JourneyRest: Sendable, Hashable {
    /// At `step`, looked at again at `due`; `waiting`: an event of its user wakes it sooner.
    case at(step: String, reachedAt: Date, due: Date, waiting: Bool)
    case left(JourneyExit)
}

/// What one decision does to a member: the moves it takes in order, the send steps whose
/// rows it writes (in the order reached), and where it rests.
public struct JourneyAdvance: Sendable, Hashable {
    public var moves: [JourneyMove] = []
    public var sends: [String] = []
    public var rest: JourneyRest

    public init(moves: [JourneyMove] = [], sends: [String] = [], rest: JourneyRest) {
        self.moves = moves
        self.sends = sends
        self.rest = rest
    }
}
