import Foundation

/// base64url (RFC 4648 §5) without padding: the reply tokens, and the
/// provider tokens (JWT) APNs takes and the simulator reads.
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The number of characters that encode `byteCount` bytes without padding.
    static func encodedLength(byteCount: Int) -> Int {
        (byteCount * 8 + 5) / 6
    }

    static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: encodedLength(byteCount: bytes.count)) { encode(bytes, into: $0) }
    }

    /// The encoding of `bytes`, without padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { encode($0) }
    }

    /// The bytes `text` encodes, or nil. Lenient, as a JWT's reader: padding
    /// (`=`) is taken but not needed, and standard base64's `+` and `/` are
    /// taken beside `-` and `_`; a length of 4n + 1 or any other character
    /// (whitespace too) gives nil.
    public static func decode(_ text: some StringProtocol) -> Data? {
        var base64 = String(text).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = base64.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { base64 += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: base64)
    }

    /// Writes the encoding of `bytes` to `output` (at least
    /// `encodedLength(byteCount: bytes.count)` long); returns its length.
    static func encode(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        alphabet.withUnsafeBufferPointer { table in
            var out = 0
            var index = 0
            while index + 3 <= bytes.count {
                let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                output[out] = table[Int(chunk >> 18 & 63)]
                output[out + 1] = table[Int(chunk >> 12 & 63)]
                output[out + 2] = table[Int(chunk >> 6 & 63)]
                output[out + 3] = table[Int(chunk & 63)]
                out += 4
                index += 3
            }
            switch bytes.count - index {
            case 1:
                let chunk = UInt32(bytes[index]) << 16
                output[out] = table[Int(chunk >> 18 & 63)]
                output[out + 1] = table[Int(chunk >> 12 & 63)]
                out += 2
            case 2:
                let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                output[out] = table[Int(chunk >> 18 & 63)]
                output[out + 1] = table[Int(chunk >> 12 & 63)]
                output[out + 2] = table[Int(chunk >> 6 & 63)]
                out += 3
            default:
                break
            }
            return out
        }
    }
}
