/// base64url (RFC 4648 §5) without padding, for the few bytes of a reply token.
enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The number of characters that encode `byteCount` bytes without padding.
    static func encodedLength(byteCount: Int) -> Int {
        (byteCount * 8 + 5) / 6
    }

    static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: encodedLength(byteCount: bytes.count)) { encode(bytes, into: $0) }
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
