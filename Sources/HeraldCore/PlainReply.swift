/// Reads the fields of a reply body straight from its bytes when it has the
/// plain shape clients send: one flat object of the contract's keys, each
/// once, in any order; string values (a value with an escape or a byte past
/// ASCII is read by `StrictJSON`'s own string reader); a delivery written
/// as a plain non-negative integer of at most 18 digits; `text` a string or
/// null; JSON whitespace anywhere JSON allows it.
///
/// It never refuses a body, it only declines one: anything else (a string
/// `StrictJSON` would refuse, another number, an unknown, missing or
/// repeated key, a key with an escape, trailing text) returns nil, and `StrictJSON` reads the body
/// or says what is wrong with it. What it accepts, `StrictJSON` accepts too,
/// with the same values (a test compares them on generated bodies).
///
/// Hand-written because the general reader (a `JSONValue` tree and a
/// dictionary of members) is too slow for `herald ingest`, which reads a reply a line.
enum PlainReply {
    static func scan(_ bytes: [UInt8]) -> ReplyFields? {
        bytes.withUnsafeBytes { raw in
            var scanner = Scanner(bytes: raw, array: bytes)
            return scanner.reply()
        }
    }

    private enum Key: UInt8 {
        case delivery = 1, token = 2, action = 4, occurredAt = 8, replyID = 16, text = 32

        static let required: UInt8 = Key.delivery.rawValue | Key.token.rawValue | Key.action.rawValue
            | Key.occurredAt.rawValue | Key.replyID.rawValue

        init?(_ name: UnsafeRawBufferPointer) {
            switch name.count {
            case 4 where name.elementsEqual("text".utf8): self = .text
            case 5 where name.elementsEqual("token".utf8): self = .token
            case 6 where name.elementsEqual("action".utf8): self = .action
            case 8 where name.elementsEqual("delivery".utf8): self = .delivery
            case 8 where name.elementsEqual("reply_id".utf8): self = .replyID
            case 11 where name.elementsEqual("occurred_at".utf8): self = .occurredAt
            default: return nil
            }
        }
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        /// The same bytes, for `StrictJSON.string(in:at:)`.
        let array: [UInt8]
        var index = 0

        init(bytes: UnsafeRawBufferPointer, array: [UInt8]) {
            self.bytes = bytes
            self.array = array
        }

        mutating func reply() -> ReplyFields? {
            skipWhitespace()
            guard take(UInt8(ascii: "{")) else { return nil }
            var seen: UInt8 = 0
            var fields = ReplyFields(delivery: 0, token: "", action: "", occurredAt: "", replyID: "", text: nil)
            while true {
                skipWhitespace()
                guard let name = plainString(), let key = Key(UnsafeRawBufferPointer(rebasing: bytes[name])),
                      seen & key.rawValue == 0 else { return nil }
                seen |= key.rawValue
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                switch key {
                case .delivery:
                    guard let value = integer() else { return nil }
                    fields.delivery = value
                case .text:
                    if takeNull() {
                        fields.text = nil
                    } else {
                        guard let value = string() else { return nil }
                        fields.text = value
                    }
                case .token, .action, .occurredAt, .replyID:
                    guard let value = string() else { return nil }
                    switch key {
                    case .token: fields.token = value
                    case .action: fields.action = value
                    case .occurredAt: fields.occurredAt = value
                    default: fields.replyID = value
                    }
                }
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")) else { return nil }
                break
            }
            skipWhitespace()
            guard index == bytes.count, seen & Key.required == Key.required else { return nil }
            return fields
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func takeNull() -> Bool {
            guard bytes.count - index >= 4, bytes[index] == UInt8(ascii: "n"), bytes[index + 1] == UInt8(ascii: "u"),
                  bytes[index + 2] == UInt8(ascii: "l"), bytes[index + 3] == UInt8(ascii: "l") else { return false }
            index += 4
            return true
        }

        /// The range of a string's contents when they are printable ASCII
        /// without escapes.
        mutating func plainString() -> Range<Int>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    defer { index += 1 }
                    return start..<index
                }
                guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
                index += 1
            }
            return nil
        }

        /// A string value: plain ones read here, the others (an escape, a
        /// byte past ASCII) by `StrictJSON`.
        mutating func string() -> String? {
            let quote = index
            if let range = plainString() {
                return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
            }
            guard let (value, end) = StrictJSON.string(in: array, at: quote) else { return nil }
            index = end
            return value
        }

        /// `0` or a digit 1–9 followed by digits, at most 18 in all, ending
        /// where a member ends (so `1.5`, `1e3` and `-1` are declined).
        mutating func integer() -> Int64? {
            let start = index
            var value: Int64 = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                // 18 digits always fit an Int64; a 19th may not.
                guard index - start < 18 else { return nil }
                value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            let digits = index - start
            guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0"), index < bytes.count else { return nil }
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: "}"): return value
            default: return nil
            }
        }
    }
}
