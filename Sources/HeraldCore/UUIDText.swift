import Foundation

/// UUIDs in their 36-character text form (8-4-4-4-12 hexadecimal digits,
/// either case), read and written without Foundation's C formatting: on Linux
/// `UUID(uuidString:)` goes through `sscanf` and `uuidString` through
/// `snprintf`, measured at 5% and 3% of `herald ingest`'s CPU for a reply
/// each. Reads the canonical form only, as Foundation does on Apple's
/// platforms; Foundation on Linux also takes a sign, an `0x` or a space
/// inside a field, which `sscanf` allows (a test compares them).
public enum UUIDText {
    /// The UUID of `text`, or nil when it is not one.
    public static func parse(_ text: String) -> UUID? {
        var text = text
        return text.withUTF8 { parse(UnsafeRawBufferPointer($0)) }
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> UUID? {
        guard bytes.count == 36 else { return nil }
        var out: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let ok = withUnsafeMutableBytes(of: &out) { raw -> Bool in
            var index = 0
            var byte = 0
            while index < 36 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard bytes[index] == UInt8(ascii: "-") else { return false }
                    index += 1
                    continue
                }
                guard let high = nibble(bytes[index]), let low = nibble(bytes[index + 1]) else { return false }
                raw[byte] = high << 4 | low
                byte += 1
                index += 2
            }
            return true
        }
        return ok ? UUID(uuid: out) : nil
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Calls `body` with the 36 bytes of `id`'s text form, in upper case as
    /// `uuidString` writes it.
    public static func withText<R>(_ id: UUID, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let digits: StaticString = "0123456789ABCDEF"
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
            withUnsafeBytes(of: id.uuid) { raw in
                digits.withUTF8Buffer { hex in
                    var index = 0
                    for (n, byte) in raw.enumerated() {
                        if n == 4 || n == 6 || n == 8 || n == 10 {
                            text[index] = UInt8(ascii: "-")
                            index += 1
                        }
                        text[index] = hex[Int(byte >> 4)]
                        text[index + 1] = hex[Int(byte & 0x0F)]
                        index += 2
                    }
                }
            }
            return try body(UnsafeRawBufferPointer(text))
        }
    }
}
