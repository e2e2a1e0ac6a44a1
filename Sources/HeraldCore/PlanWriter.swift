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
