import PostgresNIO

/// One statement of `Sql/queries/`, read from its file: its text with named parameters
/// (`:campaign`) made positional (`$1`) in order of first use, and the fragments code fills
/// in (`{{segment}}`: a rule compiled per campaign, never a value from outside).
public struct NamedQuery: Sendable, Hashable {
    /// `file/name`, as `-- name:` gives it in `Sql/queries/file.sql`.
    public let name: String
    /// The parameters in `$` order.
    public let parameters: [String]
    /// The fragments the text leaves to code.
    public let fragments: Set<String>
    /// The text, each parameter replaced by its `$n`.
    let text: String
    /// The text as its file has it (named parameters, fragments to fill).
    let source: String

    /// The statement with `fragments` filled in before its parameters are numbered: a
    /// fragment may name parameters of its own (`:capped`).
    public func filling(_ fragments: [String: String]) throws(StoreError) -> NamedQuery {
        var text = source
        for (fragment, value) in fragments {
            guard self.fragments.contains(fragment) else { throw StoreError.query(name, "has no fragment {{\(fragment)}}") }
            text = text.replacingOccurrences(of: "{{\(fragment)}}", with: value)
        }
        return try SQLQueries.statement(name, text)
    }

    /// A value bound to a named parameter.
    public struct Bind {
        let append: (inout PostgresBindings) -> Void

        public static func value<V: PostgresDynamicTypeEncodable>(_ value: V) -> Bind {
            Bind { $0.append(value) }
        }

        public static func value<V: PostgresDynamicTypeEncodable>(_ value: V?) -> Bind {
            Bind { $0.append(value) }
        }
    }

    /// The statement with `binds` for its parameters (every one, and no other) and `fragments`
    /// filled in; `more` appends binds after the named ones (a fragment's own, numbered from
    /// `parameters.count + 1`).
    public func query(_ binds: [String: Bind], fragments filled: [String: String] = [:],
                      more: (inout PostgresBindings) -> Void = { _ in }) throws(StoreError) -> PostgresQuery {
        let missing = parameters.filter { binds[$0] == nil }
        let unknown = binds.keys.filter { !parameters.contains($0) }.sorted()
        guard missing.isEmpty, unknown.isEmpty, Set(filled.keys) == fragments else {
            throw StoreError.query(name, "parameters missing \(missing), unknown \(unknown); fragments \(fragments.sorted()) given \(filled.keys.sorted())")
        }
        // A fragment that names parameters is filled with `filling`, before they are numbered.
        for (fragment, value) in filled where value.contains(where: { !$0.isWhitespace }) {
            let named = try SQLQueries.statement(name, value).parameters
            guard named.isEmpty else {
                throw StoreError.query(name, "the fragment {{\(fragment)}} names parameters \(named): fill it with filling(_:)")
            }
        }
        var bindings = PostgresBindings(capacity: parameters.count)
        for parameter in parameters { binds[parameter]?.append(&bindings) }
        more(&bindings)
        var sql = text
        for (fragment, value) in filled { sql = sql.replacingOccurrences(of: "{{\(fragment)}}", with: value) }
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }
}
