/// Writes compact JSON straight into bytes: strings escaped per RFC 8259,
/// non-ASCII text left as UTF-8 (smaller than \u escapes), no reordering.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }


    public mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    public mutating func raw(_ b: [UInt8]) {
        bytes.append(contentsOf: b)
    }

    public mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        stringContents(s)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A string's text escaped as inside a JSON string, without the quotes.
    public mutating func stringContents(_ s: String) {
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(c)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(c)
            case 0x0A: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "f"))
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          hex[Int(c >> 4)], hex[Int(c & 0xF)]])
            default: bytes.append(c)
            }
        }
    }

    public mutating func int(_ i: Int64) {
        bytes.append(contentsOf: String(i).utf8)
    }

    public mutating func double(_ d: Double) {
        if d.isFinite, d == d.rounded(), abs(d) < 1e15 {
            int(Int64(d))
        } else if d.isFinite {
            bytes.append(contentsOf: "\(d)".utf8)
        } else {
            raw("null")
        }
    }

    /// `"key":`
    public mutating func key(_ k: String) {
        string(k)
        bytes.append(UInt8(ascii: ":"))
    }

    /// An object of string values, in the order given (request headers).
    public mutating func stringObject(_ fields: [(name: String, value: String)]) {
        raw("{")
        for (i, field) in fields.enumerated() {
            if i > 0 { raw(",") }
            key(field.name)
            string(field.value)
        }
        raw("}")
    }

    public mutating func value(_ v: JSONValue) {
        switch v {
        case .null: raw("null")
        case .bool(let b): if b { raw("true") } else { raw("false") }
        case .int(let i): int(i)
        case .double(let d): double(d)
        case .string(let s): string(s)
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            for (i, e) in a.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                value(e)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let o):
            bytes.append(UInt8(ascii: "{"))
            for (i, k) in o.keys.sorted().enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                key(k)
                value(o[k] ?? .null)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}
