/// One version of a journey: its steps and, for each, its edges in position order. Checked
/// before it runs by the database (`herald_journey_problems`), so the decision meets only a
/// graph that can run; what it meets otherwise it reports (`JourneyExit.stuck`).
public struct JourneyGraph: Sendable, Hashable {
    public var first: String
    public var steps: [String: JourneyStep]
    public var edges: [String: [JourneyEdge]]

    public init(first: String, steps: [JourneyStep], edges: [JourneyEdge]) {
        self.first = first
        self.steps = Dictionary(steps.map { ($0.key, $0) }, uniquingKeysWith: { $1 })
        self.edges = Dictionary(grouping: edges, by: \.from).mapValues { $0.sorted { $0.position < $1.position } }
    }
}
