import Foundation

/// What the decision knows of one member when a run claims it: where it is and since when,
/// which edges of its journey's version hold for it now (evaluated by the database, the
/// rules' one authority), whether it reached the journey's goal, and its user's clock.
public struct JourneyMemberFacts: Sendable, Hashable {
    public var step: String
    public var reachedAt: Date
    public var holds: Set<JourneyEdge.ID>
    public var goalReached: Bool
    public var zone: TimeZone
    public var bestHour: Int?

    public init(step: String, reachedAt: Date, holds: Set<JourneyEdge.ID> = [], goalReached: Bool = false,
                zone: TimeZone = .gmt, bestHour: Int? = nil) {
        self.step = step
        self.reachedAt = reachedAt
        self.holds = holds
        self.goalReached = goalReached
        self.zone = zone
        self.bestHour = bestHour
    }
}
