import NIOCore
import NIOHPACK

/// Reads the `:status` of an answer's header block, keeping the HPACK dynamic table in step with
/// the server. Blocks that leave the table alone are read without decoding (the common case).
struct ResponseStatusReader {
    private var decoder: HPACKDecoder

    init(allocator: ByteBufferAllocator = ByteBufferAllocator()) {
        decoder = HPACKDecoder(allocator: allocator)
    }

    /// The block's `:status`, nil when it has none. A block that does not decode is a
    /// COMPRESSION_ERROR (RFC 9113 §4.3).
    mutating func status(of block: ByteBuffer) throws(HTTP2ConnectionError) -> Int? {
        if let quick = Self.quickStatus(of: block) { return quick }
        var block = block
        do {
            return Self.status(of: try decoder.decodeHeaders(from: &block))
        } catch {
            throw HTTP2ConnectionError(code: H2.compressionError)
        }
    }

    /// The `:status` of a header block that starts with a static-table `:status` and leaves the
    /// dynamic table alone (only indexed fields and literals without or never indexing: RFC 7541
    /// §6.1, §6.2.2, §6.2.3), read without decoding the rest; nil when the block needs the decoder.
    static func quickStatus(of block: ByteBuffer) -> Int? {
        block.withUnsafeReadableBytes { bytes -> Int? in
            guard let first = bytes.first else { return nil }
            let status: Int
            switch first {
            case 0x88: status = 200
            case 0x89: status = 204
            case 0x8a: status = 206
            case 0x8b: status = 304
            case 0x8c: status = 400
            case 0x8d: status = 404
            case 0x8e: status = 500
            default: return nil
            }
            var index = 1
            func integer(prefixBits: Int) -> Int? {
                let mask = (1 << prefixBits) - 1
                var value = Int(bytes[index]) & mask
                index += 1
                guard value == mask else { return value }
                var shift = 0
                while index < bytes.count, shift < 28 {
                    let byte = Int(bytes[index])
                    index += 1
                    value += (byte & 0x7f) << shift
                    if byte & 0x80 == 0 { return value }
                    shift += 7
                }
                return nil
            }
            func skipString() -> Bool {
                guard index < bytes.count, let length = integer(prefixBits: 7) else { return false }
                index += length
                return index <= bytes.count
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte & 0x80 != 0 {
                    guard integer(prefixBits: 7) != nil else { return nil }
                } else if byte & 0xf0 == 0x00 || byte & 0xf0 == 0x10 {
                    guard let nameIndex = integer(prefixBits: 4) else { return nil }
                    if nameIndex == 0, !skipString() { return nil }
                    guard skipString() else { return nil }
                } else {
                    // Incremental indexing or a table size update: the decoder must see it.
                    return nil
                }
            }
            return status
        }
    }

    /// `:status` is the first header of an answer (pseudo-headers come first).
    private static func status(of headers: HPACKHeaders) -> Int? {
        for (name, value, _) in headers {
            return name == ":status" ? Int(value) : nil
        }
        return nil
    }
}
