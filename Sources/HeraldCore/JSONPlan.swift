/// JSON written once per campaign with holes where a template's text goes:
/// bytes, then a template rendered and escaped as a JSON string, then bytes.
/// A plan without templates is one run of bytes, used as it is.
struct JSONPlan: Sendable {
    enum Piece: Sendable {
        case bytes([UInt8])
        /// A template, and (set by `bind`) its parts as rendered: its text
        /// already escaped, each output with the slot of its variable in
        /// the builder's table.
        case string(Template, parts: [Part])
    }

    enum Part: Sendable {
        case escaped([UInt8])
        case output(Template.Output, slot: Int)
    }

    var pieces: [Piece] = []

    /// The bytes of a plan without templates (nil: it has some).
    var fixed: [UInt8]? {
        switch pieces.count {
        case 0: []
        case 1: if case .bytes(let b) = pieces[0] { b } else { nil }
        default: nil
        }
    }

    /// The plan with each template's outputs left out: the least it renders to.
    var least: [UInt8] {
        var w = JSONWriter(capacity: 256)
        for piece in pieces {
            switch piece {
            case .bytes(let b): w.raw(b)
            case .string(let t, _):
                var s = ""
                for case .text(let part) in t.segments { s += part }
                w.string(s)
            }
        }
        return w.bytes
    }

    var leastCount: Int { least.count }

    /// Gives each template output the slot of its variable, adding new ones to `table`.
    mutating func bind(_ table: inout [Template.Variable]) {
        for i in pieces.indices {
            guard case .string(let t, _) = pieces[i] else { continue }
            var parts: [Part] = []
            for segment in t.segments {
                switch segment {
                case .text(let text):
                    var w = JSONWriter(capacity: text.utf8.count + 8)
                    w.stringContents(text)
                    parts.append(.escaped(w.bytes))
                case .output(let o):
                    if let at = table.firstIndex(of: o.variable) {
                        parts.append(.output(o, slot: at))
                    } else {
                        table.append(o.variable)
                        parts.append(.output(o, slot: table.count - 1))
                    }
                }
            }
            pieces[i] = .string(t, parts: parts)
        }
    }

    func render(_ context: PlanContext) throws(TemplateMiss) -> [UInt8] {
        if let fixed { return fixed }
        var w = JSONWriter(capacity: 256)
        for piece in pieces {
            switch piece {
            case .bytes(let b): w.raw(b)
            case .string(_, let parts):
                // Straight into the payload: the text pre-escaped, each value escaped as it is written.
                w.raw("\"")
                for part in parts {
                    switch part {
                    case .escaped(let b): w.raw(b)
                    case .output(let o, let slot):
                        w.stringContents(try o.render(context.value(slot: slot), formats: context.formats))
                    }
                }
                w.raw("\"")
            }
        }
        return w.bytes
    }
}

/// One device's values, as a plan renders them.
struct PlanContext {
    let variables: [Template.Variable]
    let values: PersonalValues?
    let campaignName: String
    let locale: String
    let formats: TemplateFormats

    func value(slot: Int) -> String? {
        let v = variables[slot]
        switch v.root {
        case .campaign: return campaignName
        case .device where v.path == ["locale"]: return locale
        default:
            guard let values, slot < values.values.count else { return nil }
            return values.values[slot]
        }
    }
}

/// One device's values of the variables its campaign's templates name, in
/// the order of `PayloadBuilder.variables` (the store reads them for each
/// claimed batch; nil where the user or recipient has none).
public struct PersonalValues: Sendable, Hashable {
    public var values: [String?]
    /// The user's time zone, for the date filter.
    public var timeZone: String?

    public init(values: [String?], timeZone: String?) {
        self.values = values
        self.timeZone = timeZone
    }
}

/// Writes a plan: JSON as `JSONWriter` does, with texts that hold a
/// template kept as holes.
struct PlanWriter {
    private var w: JSONWriter
    private var pieces: [JSONPlan.Piece] = []

    init(capacity: Int) {
        w = JSONWriter(capacity: capacity)
    }

    mutating func raw(_ s: StaticString) { w.raw(s) }
    mutating func string(_ s: String) { w.string(s) }
    mutating func key(_ k: String) { w.key(k) }
    mutating func double(_ d: Double) { w.double(d) }

    /// A text a marketer wrote: a template when it holds one. `field` names
    /// it in the error of one that does not parse.
    mutating func text(_ s: String, field: String) throws(CampaignProblem) {
        guard Template.isTemplate(s) else { return w.string(s) }
        let template: Template
        do {
            template = try Template(parsing: s)
        } catch {
            throw CampaignProblem("\(field): template \(error.description)")
        }
        if !w.bytes.isEmpty { pieces.append(.bytes(w.bytes)) }
        w = JSONWriter(capacity: 128)
        pieces.append(.string(template, parts: []))
    }

    /// A JSON value whose texts may be templates (objects with sorted keys, as `JSONWriter`).
    mutating func value(_ v: JSONValue, field: String) throws(CampaignProblem) {
        switch v {
        case .string(let s): try text(s, field: field)
        case .array(let a):
            w.raw("[")
            for (i, e) in a.enumerated() {
                if i > 0 { w.raw(",") }
                try value(e, field: "\(field)[\(i)]")
            }
            w.raw("]")
        case .object(let o):
            w.raw("{")
            for (i, k) in o.keys.sorted().enumerated() {
                if i > 0 { w.raw(",") }
                w.key(k)
                try value(o[k] ?? .null, field: "\(field).\(k)")
            }
            w.raw("}")
        default: w.value(v)
        }
    }

    var plan: JSONPlan {
        var p = pieces
        if !w.bytes.isEmpty || p.isEmpty { p.append(.bytes(w.bytes)) }
        return JSONPlan(pieces: p)
    }
}
