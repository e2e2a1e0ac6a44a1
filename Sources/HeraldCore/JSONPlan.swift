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
