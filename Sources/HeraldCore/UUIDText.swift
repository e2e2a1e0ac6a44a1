import Foundation

/// UUIDs in their 36-character text form (8-4-4-4-12 hexadecimal digits,
/// either case), read and written without Foundation's C formatting: on Linux
/// `UUID(uuidString:)` goes through `sscanf` and `uuidString` through
/// `snprintf`, too slow to run for every reply. Reads the canonical form
/// only, as Foundation does on Apple's platforms; Foundation on Linux also
/// takes a sign, an `0x` or a space inside a field, which `sscanf` allows
/// (a test compares them).
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

    /// `id`'s text form in lower case (as APNs's `apns-id` is sent), without Foundation's formatter.
    package static func lowercased(_ id: UUID) -> String {
        let bytes = id.uuid
        return withUnsafeBytes(of: bytes) { raw in
            String(unsafeUninitializedCapacity: 36) { out in
                let digits: StaticString = "0123456789abcdef"
                var index = 0
                for (position, byte) in raw.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        out[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    digits.withUTF8Buffer { hex in
                        out[index] = hex[Int(byte >> 4)]
                        out[index + 1] = hex[Int(byte & 0x0f)]
                    }
                    index += 2
                }
                return index
            }
        }
    }
}
