/// Why a rule was refused. `description` names the bad part of the rule.
public struct SegmentRuleError: Error, Hashable, CustomStringConvertible {
    public let path: String
    public let problem: String
    public var description: String { "segment rule at \(path): \(problem)" }
}
