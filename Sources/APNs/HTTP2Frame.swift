import NIOCore

/// One HTTP/2 frame, its payload parsed into fields. Payloads are slices of what was read
/// (no copy); padding is stripped on reading and written as zero bytes.
enum HTTP2Frame: Equatable, Sendable {
    /// `padding` is the pad length when the PADDED flag is set.
    case data(streamID: Int32, endStream: Bool, payload: ByteBuffer, padding: Int? = nil)
    case headers(streamID: Int32, endStream: Bool, endHeaders: Bool, block: ByteBuffer, padding: Int? = nil, priority: Priority? = nil)
    case priority(streamID: Int32, Priority)
    case rstStream(streamID: Int32, code: UInt32)
    case settings(ack: Bool, [Setting])
    case pushPromise(streamID: Int32, promisedStreamID: Int32)
    case ping(ack: Bool, data: UInt64)
    case goAway(lastStreamID: Int32, code: UInt32, debugData: ByteBuffer)
    case windowUpdate(streamID: Int32, increment: Int)
    case continuation(streamID: Int32, endHeaders: Bool, block: ByteBuffer)
    /// A frame type this endpoint does not know: ignored (RFC 9113 §4.1).
    case unknown(type: UInt8, flags: UInt8, streamID: Int32, payload: ByteBuffer)

    struct Priority: Equatable, Sendable {
        var exclusive: Bool
        var dependency: Int32
        var weight: UInt8
    }

    struct Setting: Equatable, Sendable {
        var parameter: UInt16
        var value: UInt32
    }

    var streamID: Int32 {
        switch self {
        case .data(let id, _, _, _), .headers(let id, _, _, _, _, _), .priority(let id, _), .rstStream(let id, _),
            .pushPromise(let id, _), .windowUpdate(let id, _), .continuation(let id, _, _), .unknown(_, _, let id, _):
            return id
        case .settings, .ping, .goAway:
            return 0
        }
    }

    /// Bytes counted against flow control (DATA only: payload and padding, RFC 9113 §6.9.1).
    var flowControlledLength: Int {
        guard case .data(_, _, let payload, let padding) = self else { return 0 }
        return payload.readableBytes + (padding.map { $0 + 1 } ?? 0)
    }
}
