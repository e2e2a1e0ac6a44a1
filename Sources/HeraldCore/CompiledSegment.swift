/// A marketer's segment rule compiled to a boolean SQL expression over the
/// aliases `u` (users) and `dv` (devices). Every value from the rule is a bind
/// parameter; the SQL text holds only fragments written here.
public struct CompiledSegment: Sendable, Hashable {
    public var sql: String
    public var binds: [SQLBind]
}
