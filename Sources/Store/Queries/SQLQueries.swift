/// The statements the code runs, filed by what they own in `Sql/queries/` (one file an
/// aggregate, `-- name:` before each statement with its why above it), read from the files
/// the binary carries. Swift names a statement and binds its parameters by name; it holds
/// no SQL text of its own beyond a few lines.
public enum SQLQueries {
    /// Every statement, by `file/name`.
    static let all: Result<[String: NamedQuery], StoreError> = Result { () throws(StoreError) in
        try load(.embedded)
    }

    /// The statement `file/name` (`audience/snapshot`: `-- name: snapshot` in `Sql/queries/audience.sql`).
    public static func named(_ name: String) throws(StoreError) -> NamedQuery {
        let statements = try all.get()
        guard let query = statements[name] else { throw StoreError.query(name, "no such statement") }
        return query
    }

    /// The statements of every `queries/*.sql` file of `files`.
    public static func load(_ files: SQLFiles) throws(StoreError) -> [String: NamedQuery] {
        var found: [String: NamedQuery] = [:]
        for name in try files.names() where name.hasPrefix("queries/") && name.hasSuffix(".sql") {
            let file = String(name.dropFirst("queries/".count).dropLast(".sql".count))
            for query in try parse(file: file, text: try files.text(name)) {
                guard found[query.name] == nil else { throw StoreError.query(query.name, "named twice") }
                found[query.name] = query
            }
        }
        return found
    }

    /// The statements of one file: each starts at a `-- name: NAME` line and runs to the next.
    /// A fragment is written `{{name}}` in the statement's text, never in its comments. The
    /// comment lines above a statement (its why) stay in the file: PostgreSQL gets the
    /// statement after `/* file/name */`, which names it in pg_stat_statements.
    public static func parse(file: String, text: String) throws(StoreError) -> [NamedQuery] {
        var statements: [NamedQuery] = []
        var name: String?
        var lines: [Substring] = []
        func close() throws(StoreError) {
            guard let name else { return }
            let full = "\(file)/\(name)"
            statements.append(try statement(full, "/* \(full) */ " + lines.joined(separator: "\n")))
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingPrefix(while: \.isWhitespace)
            if trimmed.hasPrefix("-- name:") {
                try close()
                name = trimmed.dropFirst("-- name:".count).split(whereSeparator: \.isWhitespace).first.map(String.init)
                lines = []
            } else if name != nil, !(lines.isEmpty && (trimmed.hasPrefix("--") || trimmed.isEmpty)) {
                lines.append(line)
            }
        }
        try close()
        return statements
    }

    /// One statement's text with its named parameters made positional. Quoted text, quoted
    /// names, comments and `::` casts are passed over.
    static func statement(_ name: String, _ source: String) throws(StoreError) -> NamedQuery {
        let chars = Array(source.unicodeScalars)
        var out = String.UnicodeScalarView()
        var parameters: [String] = []
        var fragments: Set<String> = []
        var i = 0
        func isNameStart(_ c: Unicode.Scalar) -> Bool { c == "_" || ("a"..."z").contains(c) }
        func isName(_ c: Unicode.Scalar) -> Bool { isNameStart(c) || ("0"..."9").contains(c) }
        while i < chars.count {
            let c = chars[i]
            if c == "'" || c == "\"" {
                // Through the closing quote (a doubled one stays inside).
                out.append(c)
                i += 1
                while i < chars.count {
                    out.append(chars[i])
                    if chars[i] == c {
                        if i + 1 < chars.count, chars[i + 1] == c {
                            out.append(chars[i + 1])
                            i += 2
                            continue
                        }
                        break
                    }
                    i += 1
                }
                i += 1
            } else if c == "-", i + 1 < chars.count, chars[i + 1] == "-" {
                while i < chars.count, chars[i] != "\n" {
                    out.append(chars[i])
                    i += 1
                }
            } else if c == ":", i + 1 < chars.count, chars[i + 1] == ":" {
                out.append(c)
                out.append(chars[i + 1])
                i += 2
            } else if c == ":", i + 1 < chars.count, isNameStart(chars[i + 1]) {
                var j = i + 1
                while j < chars.count, isName(chars[j]) { j += 1 }
                let parameter = String(String.UnicodeScalarView(chars[(i + 1)..<j]))
                let index: Int
                if let known = parameters.firstIndex(of: parameter) {
                    index = known
                } else {
                    parameters.append(parameter)
                    index = parameters.count - 1
                }
                out.append(contentsOf: "$\(index + 1)".unicodeScalars)
                i = j
            } else if c == "{", i + 1 < chars.count, chars[i + 1] == "{" {
                var j = i + 2
                while j + 1 < chars.count, !(chars[j] == "}" && chars[j + 1] == "}") { j += 1 }
                guard j + 1 < chars.count else { throw StoreError.query(name, "a {{fragment}} is not closed") }
                let fragment = String(String.UnicodeScalarView(chars[(i + 2)..<j]))
                fragments.insert(fragment)
                out.append(contentsOf: "{{\(fragment)}}".unicodeScalars)
                i = j + 2
            } else {
                out.append(c)
                i += 1
            }
        }
        var text = String(out)
        while let last = text.last, last.isWhitespace || last == ";" { text.removeLast() }
        guard text.contains(where: { !$0.isWhitespace }) else { throw StoreError.query(name, "has no statement") }
        return NamedQuery(name: name, parameters: parameters, fragments: fragments, text: text, source: source)
    }
}
