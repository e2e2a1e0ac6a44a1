/// A strict JSON reader (RFC 8259 and nothing more) for bytes that come from
/// outside: reply bodies and `herald ingest` lines.
///
/// Why not Foundation's `JSONDecoder` alone: it is lenient where a server
/// facing the internet must not be. With Swift 6.3 on Linux it accepts
/// `{"a":1,"a":2}` (keeping one of the two, so a body can say one thing to a
/// proxy or a log reader and another to us), accepts `{"a":1,}`, reads `1.0`
/// and `1e2` into an `Int64` field, and has no depth limit of ours. This
/// reader refuses all of that with a message naming the problem and the byte
/// offset, and gives back a `JSONValue`:
///
/// - the text must be valid UTF-8 (no overlong forms, no surrogates, no BOM);
/// - no duplicate keys in any object, no trailing commas, nothing after the value;
/// - no raw control characters in strings; escapes are the JSON ones, and a
///   `\u` escape must not leave half a surrogate pair;
/// - numbers follow the JSON grammar, are at most `maxNumberLength`
///   characters, and must fit: an integer literal in `Int64`, any other in a
///   finite `Double`;
/// - arrays and objects nest at most `maxDepth` deep.
public enum StrictJSON {
    public struct Error: Swift.Error, Hashable, CustomStringConvertible {
        /// What is wrong, for the client; never more than a short quote of the input.
        public let message: String
        /// The byte offset where reading stopped.
        public let offset: Int

        public var description: String { "\(message) (at byte \(offset))" }
    }

    public struct Limits: Sendable, Hashable {
        public var maxDepth: Int
        public var maxNumberLength: Int

        public init(maxDepth: Int = 16, maxNumberLength: Int = 40) {
            self.maxDepth = maxDepth
            self.maxNumberLength = maxNumberLength
        }
    }

    public static func parse(_ bytes: some Collection<UInt8>, limits: Limits = .init()) throws(Error) -> JSONValue {
        var reader = Reader(bytes: Array(bytes), limits: limits)
        reader.skipWhitespace()
        if reader.bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw Error(message: "the body starts with a byte order mark", offset: 0)
        }
        guard reader.index < reader.bytes.count else {
            throw Error(message: "the body is empty", offset: 0)
        }
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == reader.bytes.count else {
            throw reader.fail("unexpected text after the JSON value")
        }
        return value
    }

    /// The JSON string whose opening quote is at `bytes[start]`, read as
    /// `parse` reads one, and the index just past its closing quote; nil
    /// where `parse` would refuse it. (For `PlainReply`, which reads the
    /// rest of a reply itself.)
    static func string(in bytes: [UInt8], at start: Int) -> (value: String, end: Int)? {
        guard start < bytes.count, bytes[start] == UInt8(ascii: "\"") else { return nil }
        var reader = Reader(bytes: bytes, limits: .init())
        reader.index = start
        guard let value = try? reader.string() else { return nil }
        return (value, reader.index)
    }

    /// A short, printable quote of untrusted text for an error message.
    public static func quote(_ text: String, max: Int = 40) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(max) {
            if scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value) {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else if scalar == "\"" || scalar == "\\" {
                out += "\\"
                out.unicodeScalars.append(scalar)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if text.unicodeScalars.count > max { out += "…" }
        return "\"" + out + "\""
    }

    private struct Reader {
        let bytes: [UInt8]
        let limits: Limits
        var index = 0

        init(bytes: [UInt8], limits: Limits) {
            self.bytes = bytes
            self.limits = limits
        }

        func fail(_ message: String) -> Error {
            Error(message: message, offset: index)
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws(Error) -> JSONValue {
            guard index < bytes.count else { throw fail("the JSON text ends too early") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw fail("unexpected character where a JSON value should start")
            }
        }

        mutating func literal(_ word: String) throws(Error) {
            let w = Array(word.utf8)
            guard bytes.count - index >= w.count, Array(bytes[index..<index + w.count]) == w else {
                throw fail("unexpected character where a JSON value should start")
            }
            index += w.count
        }

        mutating func object(depth: Int) throws(Error) -> JSONValue {
            guard depth <= limits.maxDepth else { throw fail("objects and arrays nest deeper than \(limits.maxDepth)") }
            index += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count else { throw fail("the JSON text ends inside an object") }
                guard bytes[index] == UInt8(ascii: "\"") else {
                    if bytes[index] == UInt8(ascii: "}") { throw fail("trailing comma in an object") }
                    throw fail("expected a quoted key in an object")
                }
                let keyStart = index
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':' after a key") }
                index += 1
                skipWhitespace()
                let v = try value(depth: depth)
                guard members.updateValue(v, forKey: key) == nil else {
                    throw Error(message: "duplicate key \(StrictJSON.quote(key))", offset: keyStart)
                }
                skipWhitespace()
                guard index < bytes.count else { throw fail("the JSON text ends inside an object") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                throw fail("expected ',' or '}' in an object")
            }
        }

        mutating func array(depth: Int) throws(Error) -> JSONValue {
            guard depth <= limits.maxDepth else { throw fail("objects and arrays nest deeper than \(limits.maxDepth)") }
            index += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { throw fail("trailing comma in an array") }
                items.append(try value(depth: depth))
                skipWhitespace()
                guard index < bytes.count else { throw fail("the JSON text ends inside an array") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                throw fail("expected ',' or ']' in an array")
            }
        }

        mutating func number() throws(Error) -> JSONValue {
            let start = index
            var integral = true
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("a number needs digits") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if index < bytes.count, isDigit(bytes[index]) { throw fail("a number must not start with 0") }
            } else {
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                integral = false
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("a number needs digits after '.'") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                integral = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("a number needs digits in its exponent") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            guard index - start <= limits.maxNumberLength else {
                throw Error(message: "a number longer than \(limits.maxNumberLength) characters", offset: start)
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if integral {
                guard let n = Int64(text) else { throw Error(message: "an integer out of range", offset: start) }
                return .int(n)
            }
            guard let d = Double(text), d.isFinite else { throw Error(message: "a number out of range", offset: start) }
            return .double(d)
        }

        func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

        mutating func hex4() throws(Error) -> UInt32 {
            guard bytes.count - index >= 4 else { throw fail("a \\u escape needs four hex digits") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let b = bytes[index]
                let d: UInt32
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(b - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(b - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(b - UInt8(ascii: "A") + 10)
                default: throw fail("a \\u escape needs four hex digits")
                }
                v = v << 4 | d
                index += 1
            }
            return v
        }

        mutating func string() throws(Error) -> String {
            index += 1  // the opening quote
            // Most strings are plain ASCII without escapes: taken whole.
            let start = index
            while index < bytes.count {
                let b = bytes[index]
                guard b >= 0x20, b < 0x80, b != UInt8(ascii: "\""), b != UInt8(ascii: "\\") else { break }
                index += 1
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: bytes[start..<index - 1], as: UTF8.self)
            }
            var scalars = String.UnicodeScalarView()
            for b in bytes[start..<index] { scalars.append(Unicode.Scalar(b)) }
            while true {
                guard index < bytes.count else { throw fail("the JSON text ends inside a string") }
                let b = bytes[index]
                switch b {
                case UInt8(ascii: "\""):
                    index += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < bytes.count else { throw fail("the JSON text ends inside a string") }
                    let e = bytes[index]
                    index += 1
                    switch e {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        var v = try hex4()
                        if (0xD800...0xDBFF).contains(v) {
                            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                                throw fail("a \\u escape leaves half a surrogate pair")
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw fail("a \\u escape leaves half a surrogate pair") }
                            v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                        } else if (0xDC00...0xDFFF).contains(v) {
                            throw fail("a \\u escape leaves half a surrogate pair")
                        }
                        guard let scalar = Unicode.Scalar(v) else { throw fail("a \\u escape is not a character") }
                        scalars.append(scalar)
                    default:
                        index -= 1
                        throw fail("an unknown escape in a string")
                    }
                case 0x00..<0x20:
                    throw fail("a control character inside a string (escape it)")
                case 0x00..<0x80:
                    scalars.append(Unicode.Scalar(b))
                    index += 1
                default:
                    scalars.append(try utf8Scalar())
                }
            }
        }

        /// One multi-byte UTF-8 sequence, checked the strict way (RFC 3629).
        mutating func utf8Scalar() throws(Error) -> Unicode.Scalar {
            let b0 = bytes[index]
            let count: Int
            var v: UInt32
            switch b0 {
            case 0xC2...0xDF: count = 2; v = UInt32(b0 & 0x1F)
            case 0xE0...0xEF: count = 3; v = UInt32(b0 & 0x0F)
            case 0xF0...0xF4: count = 4; v = UInt32(b0 & 0x07)
            default: throw fail("the text is not valid UTF-8")
            }
            guard bytes.count - index >= count else { throw fail("the text is not valid UTF-8") }
            for i in 1..<count {
                let b = bytes[index + i]
                guard b & 0xC0 == 0x80 else { throw fail("the text is not valid UTF-8") }
                v = v << 6 | UInt32(b & 0x3F)
            }
            let minimum: UInt32 = count == 2 ? 0x80 : count == 3 ? 0x800 : 0x10000
            guard v >= minimum, v <= 0x10FFFF, !(0xD800...0xDFFF).contains(v), let scalar = Unicode.Scalar(v) else {
                throw fail("the text is not valid UTF-8")
            }
            index += count
            return scalar
        }
    }
}
