/// An edge of one version of a journey (`journey_edges`): from a step, in `position` order,
/// taken when it holds, to a step (nil: the member leaves).
public struct JourneyEdge: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case next, reply, action, text, received, opened, converted, segment, timeout, share
        case otherwise = "else"

        /// Whether the database says if the edge holds (its rule: a reply, a text rule, a
        /// segment, a share); the others are the decision's own (`next`, `timeout`, `else`).
        public var heldBySQL: Bool { self != .next && self != .timeout && self != .otherwise }
    }

    public var from: String
    public var position: Int
    public var kind: Kind
    public var to: String?

    public init(from: String, position: Int, kind: Kind, to: String?) {
        self.from = from
        self.position = position
        self.kind = kind
        self.to = to
    }

    public var id: ID { ID(from: from, position: position) }

    public struct ID: Sendable, Hashable {
        public var from: String
        public var position: Int

        public init(from: String, position: Int) {
            self.from = from
            self.position = position
        }
    }
}
