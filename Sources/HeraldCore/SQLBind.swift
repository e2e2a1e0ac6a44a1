/// A value bound to a `$n` placeholder of a compiled statement.
public enum SQLBind: Sendable, Hashable {
    case text(String)
    case texts([String])
    case int(Int64)
    case double(Double)
    case bool(Bool)
    /// JSON text, cast to jsonb in the statement.
    case json(String)
}
