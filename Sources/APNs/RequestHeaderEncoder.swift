import NIOCore
import NIOHPACK

/// HPACK encoder for the client's requests (RFC 7541), without Huffman coding.
///
/// Fields that repeat from request to request (`:authority`, `authorization`, `apns-topic`,
/// `apns-push-type`, `apns-priority`) are inserted into the peer's dynamic table once and then
/// sent as one-byte indices; the bytes of that constant part are cached while the table does not
/// change. Unique values (`:path`, `apns-id`) are literals never indexed.
struct RequestHeaderEncoder {
    private struct Entry {
        var name: String
        var value: String
        var size: Int
    }

    /// Mirror of the peer decoder's dynamic table: oldest first.
    private var entries = CircularBuffer<Entry>(initialCapacity: 16)
    private var tableSize = 0
    /// The table size this encoder uses (≤ the peer's SETTINGS_HEADER_TABLE_SIZE, ≤ 4096).
    private var maxTableSize = 4096
    private var pendingSizeUpdate: Int?
    /// Changes whenever the dynamic table changes.
    private var epoch = 0

    private struct ConstantKey {
        var authority: String
        var authorization: String?
        var topic: String
        var pushType: String
        var priority: Int
    }

    private var cachedKey: ConstantKey?
    private var cachedEpoch = -1
    private var cachedBlock = ByteBuffer()

    /// The peer's SETTINGS_HEADER_TABLE_SIZE.
    mutating func peerTableSizeChanged(_ size: Int) {
        let newSize = min(4096, size)
        guard newSize != maxTableSize else { return }
        maxTableSize = newSize
        pendingSizeUpdate = min(pendingSizeUpdate ?? newSize, newSize)
        evict(toFit: 0)
        epoch &+= 1
    }

    mutating func encode(_ head: RequestHead, into out: inout ByteBuffer) {
        if let update = pendingSizeUpdate {
            pendingSizeUpdate = nil
            Self.writeInteger(update, prefixBits: 5, flags: 0x20, into: &out)
            // The size we use now (equal to the minimum sent when it was lowered twice).
            if update != maxTableSize {
                Self.writeInteger(maxTableSize, prefixBits: 5, flags: 0x20, into: &out)
            }
        }
        switch head {
        case .apns(let head):
            encodeAPNs(head, into: &out)
        case .raw(let headers):
            for (name, value, _) in headers {
                out.writeInteger(UInt8(0x00))
                Self.writeString(name, into: &out)
                Self.writeString(value, into: &out)
            }
        }
    }

    private static let pathPrefix: StaticString = "/3/device/"

    private mutating func encodeAPNs(_ head: APNsRequestHead, into out: inout ByteBuffer) {
        // :path, never indexed (static name index 4).
        out.writeInteger(UInt8(0x14))
        Self.writeInteger(Self.pathPrefix.utf8CodeUnitCount + head.deviceToken.utf8.count, prefixBits: 7, flags: 0, into: &out)
        out.writeStaticString(Self.pathPrefix)
        out.writeString(head.deviceToken)

        writeConstantPart(head, into: &out)

        if let expiration = head.expiration {
            out.writeInteger(UInt8(0x00))
            Self.writeString("apns-expiration", into: &out)
            Self.writeString(String(expiration), into: &out)
        }
        if let collapseID = head.collapseID {
            out.writeInteger(UInt8(0x00))
            Self.writeString("apns-collapse-id", into: &out)
            Self.writeString(collapseID, into: &out)
        }
        // apns-id, never indexed, literal name.
        out.writeInteger(UInt8(0x10))
        Self.writeString("apns-id", into: &out)
        Self.writeString(head.apnsID, into: &out)
        // content-length without indexing (static name index 28).
        out.writeInteger(UInt16(0x0F0D))
        Self.writeString(String(head.contentLength), into: &out)
    }

    private mutating func writeConstantPart(_ head: APNsRequestHead, into out: inout ByteBuffer) {
        if cachedEpoch == epoch, let key = cachedKey, key.priority == head.priority,
            key.authorization == head.authorization, key.authority == head.authority,
            key.topic == head.topic, key.pushType == head.pushType
        {
            out.writeImmutableBuffer(cachedBlock)
            return
        }
        let start = out.writerIndex
        let epochBefore = epoch
        // :method POST (static 3), :scheme https (static 7).
        out.writeInteger(UInt16(0x8387))
        writeIndexed(name: ":authority", staticNameIndex: 1, value: head.authority, into: &out)
        if let authorization = head.authorization {
            writeIndexed(name: "authorization", staticNameIndex: 23, value: authorization, into: &out)
        }
        writeIndexed(name: "apns-topic", staticNameIndex: nil, value: head.topic, into: &out)
        writeIndexed(name: "apns-push-type", staticNameIndex: nil, value: head.pushType, into: &out)
        writeIndexed(
            name: "apns-priority",
            staticNameIndex: nil,
            value: head.priority == 10 ? "10" : String(head.priority),
            into: &out
        )
        // Only a block made of indices can be replayed; one that inserted entries cannot.
        if epoch == epochBefore, let block = out.getSlice(at: start, length: out.writerIndex - start) {
            cachedBlock = block
            cachedKey = ConstantKey(
                authority: head.authority,
                authorization: head.authorization,
                topic: head.topic,
                pushType: head.pushType,
                priority: head.priority
            )
            cachedEpoch = epoch
        } else {
            cachedKey = nil
        }
    }

    /// An index into the dynamic table when the field is there, else a literal with incremental
    /// indexing (which inserts it).
    private mutating func writeIndexed(name: String, staticNameIndex: Int?, value: String, into out: inout ByteBuffer) {
        let count = entries.count
        var position = count - 1
        while position >= 0 {
            let entry = entries[entries.index(entries.startIndex, offsetBy: position)]
            if entry.value == value, entry.name == name {
                Self.writeInteger(62 + (count - 1 - position), prefixBits: 7, flags: 0x80, into: &out)
                return
            }
            position -= 1
        }
        if let staticNameIndex {
            Self.writeInteger(staticNameIndex, prefixBits: 6, flags: 0x40, into: &out)
        } else {
            out.writeInteger(UInt8(0x40))
            Self.writeString(name, into: &out)
        }
        Self.writeString(value, into: &out)
        insert(name: name, value: value)
    }

    private mutating func insert(name: String, value: String) {
        let size = name.utf8.count + value.utf8.count + 32
        epoch &+= 1
        guard size <= maxTableSize else {
            entries.removeAll(keepingCapacity: true)
            tableSize = 0
            return
        }
        evict(toFit: size)
        entries.append(Entry(name: name, value: value, size: size))
        tableSize += size
    }

    private mutating func evict(toFit size: Int) {
        while tableSize + size > maxTableSize, let oldest = entries.first {
            entries.removeFirst()
            tableSize -= oldest.size
        }
    }

    static func writeInteger(_ value: Int, prefixBits: Int, flags: UInt8, into out: inout ByteBuffer) {
        let maxPrefix = (1 << prefixBits) - 1
        if value < maxPrefix {
            out.writeInteger(flags | UInt8(value))
            return
        }
        out.writeInteger(flags | UInt8(maxPrefix))
        var rest = value - maxPrefix
        while rest >= 128 {
            out.writeInteger(UInt8(truncatingIfNeeded: rest & 0x7f) | 0x80)
            rest >>= 7
        }
        out.writeInteger(UInt8(rest))
    }

    /// A string literal without Huffman coding.
    static func writeString(_ string: String, into out: inout ByteBuffer) {
        writeInteger(string.utf8.count, prefixBits: 7, flags: 0, into: &out)
        out.writeString(string)
    }
}
