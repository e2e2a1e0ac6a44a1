/// The segment rule language (docs/marketers.md, "Segments"):
///
///     {}                                           everyone
///     {"all": [rule, …]}  {"any": [rule, …]}  {"not": rule}
///     {"attr": NAME, "op": OP, "value": VALUE}
///
/// NAME is `locale`, `time_zone`, `environment`, `external_id`, `app_version`,
/// `last_seen`, `has_key`, or `attributes.KEY` for a key of the user's
/// attributes object.
public struct SegmentCompiler: Sendable {
    public static let maxDepth = 8
    public static let maxConditions = 100

    /// Placeholder number of the first bind (`$firstPlaceholder`).
    public var firstPlaceholder: Int
    /// The aliases the statement that embeds the condition gives `devices`
    /// and `users`: the statement's owner says them, nobody else assumes them.
    public var deviceAlias: String
    public var userAlias: String

    public init(firstPlaceholder: Int = 1, deviceAlias: String = "dv", userAlias: String = "u") {
        self.firstPlaceholder = firstPlaceholder
        self.deviceAlias = deviceAlias
        self.userAlias = userAlias
    }

    public func compile(_ rule: JSONValue) throws(SegmentRuleError) -> CompiledSegment {
        var state = State(next: firstPlaceholder)
        let sql = try node(rule, path: "rule", depth: 0, state: &state)
        return CompiledSegment(sql: sql, binds: state.binds)
    }

    private struct State {
        var next: Int
        var binds: [SQLBind] = []
        var conditions = 0

        mutating func bind(_ b: SQLBind) -> String {
            binds.append(b)
            defer { next += 1 }
            return "$\(next)"
        }
    }

    private func node(_ rule: JSONValue, path: String, depth: Int, state: inout State) throws(SegmentRuleError) -> String {
        guard depth <= Self.maxDepth else {
            throw SegmentRuleError(path: path, problem: "nested deeper than \(Self.maxDepth) levels")
        }
        guard case .object(let members) = rule else {
            throw SegmentRuleError(path: path, problem: "expected an object, found \(rule.typeName)")
        }
        if members.isEmpty { return "TRUE" }
        let keys = Set(members.keys)
        for combinator in ["all", "any"] where keys.contains(combinator) {
            guard keys.count == 1 else {
                throw SegmentRuleError(path: path, problem: "\"\(combinator)\" must be the only key of its object")
            }
            guard case .array(let parts) = members[combinator] ?? .null, !parts.isEmpty else {
                throw SegmentRuleError(path: "\(path).\(combinator)", problem: "expected a non-empty array of rules")
            }
            var sqls: [String] = []
            for (i, part) in parts.enumerated() {
                sqls.append(try node(part, path: "\(path).\(combinator)[\(i)]", depth: depth + 1, state: &state))
            }
            return "(" + sqls.joined(separator: combinator == "all" ? " AND " : " OR ") + ")"
        }
        if keys.contains("not") {
            guard keys.count == 1, let inner = members["not"] else {
                throw SegmentRuleError(path: path, problem: "\"not\" must be the only key of its object")
            }
            return "(NOT " + (try node(inner, path: "\(path).not", depth: depth + 1, state: &state)) + ")"
        }
        let unknown = keys.subtracting(["attr", "op", "value"])
        if let bad = unknown.sorted().first {
            throw SegmentRuleError(path: path, problem: "unknown key \"\(bad)\"; a rule is {\"all\"|\"any\": […]}, {\"not\": …} or {\"attr\", \"op\", \"value\"}")
        }
        state.conditions += 1
        guard state.conditions <= Self.maxConditions else {
            throw SegmentRuleError(path: path, problem: "more than \(Self.maxConditions) conditions")
        }
        return try condition(members, path: path, state: &state)
    }

    private func condition(_ m: [String: JSONValue], path: String, state: inout State) throws(SegmentRuleError) -> String {
        guard let attr = m["attr"]?.stringValue else {
            throw SegmentRuleError(path: "\(path).attr", problem: "expected the name of an attribute")
        }
        guard let op = m["op"]?.stringValue else {
            throw SegmentRuleError(path: "\(path).op", problem: "expected an operator")
        }
        let value = m["value"]
        let vpath = "\(path).value"

        func text() throws(SegmentRuleError) -> String {
            guard let s = value?.stringValue else {
                throw SegmentRuleError(path: vpath, problem: "expected a string, found \(value?.typeName ?? "nothing")")
            }
            return s
        }
        func texts() throws(SegmentRuleError) -> [String] {
            guard case .array(let items) = value ?? .null, !items.isEmpty else {
                throw SegmentRuleError(path: vpath, problem: "expected a non-empty array of strings")
            }
            var out: [String] = []
            for (i, item) in items.enumerated() {
                guard let s = item.stringValue else {
                    throw SegmentRuleError(path: "\(vpath)[\(i)]", problem: "expected a string, found \(item.typeName)")
                }
                out.append(s)
            }
            return out
        }
        func unsupported(_ allowed: String) -> SegmentRuleError {
            SegmentRuleError(path: "\(path).op", problem: "operator \"\(op)\" does not apply to \(attr); use \(allowed)")
        }

        // Text columns compared as text.
        let textColumns = ["locale": "\(userAlias).locale", "time_zone": "\(userAlias).time_zone",
                           "environment": "\(deviceAlias).environment", "external_id": "\(userAlias).external_id"]
        if let column = textColumns[attr] {
            switch op {
            case "=": return "\(column) = \(state.bind(.text(try text())))"
            case "!=": return "\(column) <> \(state.bind(.text(try text())))"
            case "in": return "\(column) = ANY(\(state.bind(.texts(try texts()))))"
            case "not_in": return "\(column) <> ALL(\(state.bind(.texts(try texts()))))"
            case "prefix": return "starts_with(\(column), \(state.bind(.text(try text()))))"
            default: throw unsupported("=, !=, in, not_in or prefix")
            }
        }
        switch attr {
        case "app_version":
            let ops = ["=": "=", "!=": "<>", ">": ">", ">=": ">=", "<": "<", "<=": "<="]
            guard let sqlOp = ops[op] else { throw unsupported("=, !=, >, >=, < or <=") }
            let v = try text()
            guard v.first?.isNumber == true, v.allSatisfy({ $0.isNumber || $0 == "." }) else {
                throw SegmentRuleError(path: vpath, problem: "\"\(v)\" is not a version such as \"2.3\" or \"2.10.1\"")
            }
            return "herald_version(\(deviceAlias).app_version) \(sqlOp) herald_version(\(state.bind(.text(v))))"
        case "last_seen":
            guard op == "within" || op == "not_within" else { throw unsupported("within or not_within") }
            let seconds = try Self.durationSeconds(try text(), path: vpath)
            let p = state.bind(.int(seconds))
            return op == "within"
                ? "\(deviceAlias).last_seen_at >= now() - make_interval(secs => \(p))"
                : "(\(deviceAlias).last_seen_at IS NULL OR \(deviceAlias).last_seen_at < now() - make_interval(secs => \(p)))"
        case "has_key":
            guard op == "=" else { throw unsupported("=") }
            guard case .bool(let b) = value ?? .null else {
                throw SegmentRuleError(path: vpath, problem: "expected true or false")
            }
            return "((\(deviceAlias).public_key IS NOT NULL) = \(state.bind(.bool(b))))"
        default:
            break
        }
        if attr.hasPrefix("attributes.") {
            let key = String(attr.dropFirst("attributes.".count))
            guard !key.isEmpty else {
                throw SegmentRuleError(path: "\(path).attr", problem: "name the attribute after \"attributes.\"")
            }
            switch op {
            case "exists":
                return "\(userAlias).attributes ? \(state.bind(.text(key)))"
            case "=", "!=":
                guard let v = value, v != .null else {
                    throw SegmentRuleError(path: vpath, problem: "expected a value to compare with")
                }
                let k = state.bind(.text(key))
                let j = state.bind(.json(v.jsonText))
                return op == "="
                    ? "\(userAlias).attributes -> \(k) = \(j)::jsonb"
                    : "\(userAlias).attributes -> \(k) IS DISTINCT FROM \(j)::jsonb"
            case "in", "not_in":
                guard case .array(let items) = value ?? .null, !items.isEmpty else {
                    throw SegmentRuleError(path: vpath, problem: "expected a non-empty array of values")
                }
                let k = state.bind(.text(key))
                let j = state.bind(.json(JSONValue.array(items).jsonText))
                let test = "(\(j)::jsonb @> jsonb_build_array(\(userAlias).attributes -> \(k)))"
                return op == "in" ? "coalesce(\(test), false)" : "NOT coalesce(\(test), false)"
            case ">", ">=", "<", "<=":
                let number: Double
                switch value ?? .null {
                case .int(let i): number = Double(i)
                case .double(let d): number = d
                default:
                    throw SegmentRuleError(path: vpath, problem: "expected a number, found \(value?.typeName ?? "nothing")")
                }
                let k = state.bind(.text(key))
                let n = state.bind(.double(number))
                return "(CASE WHEN jsonb_typeof(\(userAlias).attributes -> \(k)) = 'number' THEN (\(userAlias).attributes ->> \(k))::float8 END) \(op) \(n)"
            default:
                throw unsupported("=, !=, in, not_in, exists, >, >=, < or <=")
            }
        }
        throw SegmentRuleError(
            path: "\(path).attr",
            problem: "unknown attribute \"\(attr)\"; use locale, time_zone, environment, external_id, app_version, last_seen, has_key or attributes.KEY")
    }

    /// "30 days", "12 hours", "90 minutes", "2 weeks" → seconds.
    static func durationSeconds(_ s: String, path: String) throws(SegmentRuleError) -> Int64 {
        let parts = s.split(separator: " ", omittingEmptySubsequences: true)
        let units: [String: Int64] = ["minute": 60, "minutes": 60, "hour": 3600, "hours": 3600,
                                      "day": 86400, "days": 86400, "week": 604_800, "weeks": 604_800]
        guard parts.count == 2, let n = Int64(parts[0]), n > 0, n <= 100_000,
              let unit = units[String(parts[1]).lowercased()] else {
            throw SegmentRuleError(path: path, problem: "\"\(s)\" is not a duration such as \"30 days\", \"12 hours\" or \"90 minutes\"")
        }
        return n * unit
    }
}
