import NIOCore

/// HTTP/2 frame types, flags, error codes and settings the client uses (RFC 9113 §6, §7, §11).
enum H2 {
    static let data: UInt8 = 0x0
    static let headers: UInt8 = 0x1
    static let priority: UInt8 = 0x2
    static let rstStream: UInt8 = 0x3
    static let settings: UInt8 = 0x4
    static let pushPromise: UInt8 = 0x5
    static let ping: UInt8 = 0x6
    static let goAway: UInt8 = 0x7
    static let windowUpdate: UInt8 = 0x8
    static let continuation: UInt8 = 0x9

    static let endStreamFlag: UInt8 = 0x1
    static let ackFlag: UInt8 = 0x1
    static let endHeadersFlag: UInt8 = 0x4
    static let paddedFlag: UInt8 = 0x8
    static let priorityFlag: UInt8 = 0x20

    static let noError: UInt32 = 0x0
    static let protocolError: UInt32 = 0x1
    static let flowControlError: UInt32 = 0x3
    static let frameSizeError: UInt32 = 0x6
    static let refusedStream: UInt32 = 0x7
    static let cancel: UInt32 = 0x8
    static let compressionError: UInt32 = 0x9

    static let settingHeaderTableSize: UInt16 = 0x1
    static let settingEnablePush: UInt16 = 0x2
    static let settingMaxConcurrentStreams: UInt16 = 0x3
    static let settingInitialWindowSize: UInt16 = 0x4
    static let settingMaxFrameSize: UInt16 = 0x5

    static let frameHeaderSize = 9
    static let defaultWindow = 65_535
    static let maxWindow = Int(Int32.max)
    static let defaultMaxFrameSize = 16_384
    static let clientPreface: StaticString = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
}

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

/// A frame that breaks the framing layer: a connection error with this code (RFC 9113 §5.4.1).
struct HTTP2ConnectionError: Error, Equatable {
    var code: UInt32
}

/// Reads frames from bytes that arrive in pieces of any size; a frame is returned once its
/// last byte has arrived. Frames longer than `maxFrameSize` (what we announced, RFC 9113 §4.2)
/// and payloads of the wrong length for their type are connection errors.
struct HTTP2FrameDecoder {
    let maxFrameSize: Int
    private var buffer = ByteBuffer()

    init(maxFrameSize: Int = H2.defaultMaxFrameSize) {
        self.maxFrameSize = maxFrameSize
    }

    /// Bytes read but not yet part of a whole frame.
    var bufferedBytes: Int { buffer.readableBytes }

    mutating func append(_ bytes: ByteBuffer) {
        if buffer.readableBytes == 0 {
            buffer = bytes
        } else {
            var bytes = bytes
            buffer.writeBuffer(&bytes)
        }
    }

    /// The next whole frame, nil when more bytes are needed.
    mutating func nextFrame() throws(HTTP2ConnectionError) -> HTTP2Frame? {
        guard buffer.readableBytes >= H2.frameHeaderSize else {
            compact()
            return nil
        }
        let start = buffer.readerIndex
        guard let lengthAndType = buffer.getInteger(at: start, as: UInt32.self),
            let flags = buffer.getInteger(at: start + 4, as: UInt8.self),
            let rawStreamID = buffer.getInteger(at: start + 5, as: UInt32.self)
        else { return nil }
        let length = Int(lengthAndType >> 8)
        guard length <= maxFrameSize else { throw HTTP2ConnectionError(code: H2.frameSizeError) }
        guard buffer.readableBytes >= H2.frameHeaderSize + length,
            let payload = buffer.getSlice(at: start + H2.frameHeaderSize, length: length)
        else {
            compact()
            return nil
        }
        buffer.moveReaderIndex(forwardBy: H2.frameHeaderSize + length)
        let type = UInt8(truncatingIfNeeded: lengthAndType)
        let streamID = Int32(bitPattern: rawStreamID & 0x7fff_ffff)
        return try Self.parse(type: type, flags: flags, streamID: streamID, payload: payload)
    }

    private mutating func compact() {
        if buffer.readableBytes == 0 {
            buffer = ByteBuffer()
        } else if buffer.readerIndex > 64 * 1024 {
            buffer.discardReadBytes()
        }
    }

    static func parse(type: UInt8, flags: UInt8, streamID: Int32, payload: ByteBuffer) throws(HTTP2ConnectionError) -> HTTP2Frame {
        var payload = payload
        switch type {
        case H2.data:
            guard streamID != 0 else { throw HTTP2ConnectionError(code: H2.protocolError) }
            let padding = try stripPadding(flags: flags, &payload)
            return .data(streamID: streamID, endStream: flags & H2.endStreamFlag != 0, payload: payload, padding: padding)
        case H2.headers:
            guard streamID != 0 else { throw HTTP2ConnectionError(code: H2.protocolError) }
            let padding = try stripPadding(flags: flags, &payload)
            var priority: HTTP2Frame.Priority?
            if flags & H2.priorityFlag != 0 {
                guard let dependency = payload.readInteger(as: UInt32.self), let weight = payload.readInteger(as: UInt8.self)
                else { throw HTTP2ConnectionError(code: H2.frameSizeError) }
                priority = .init(exclusive: dependency & 0x8000_0000 != 0, dependency: Int32(bitPattern: dependency & 0x7fff_ffff), weight: weight)
            }
            return .headers(
                streamID: streamID,
                endStream: flags & H2.endStreamFlag != 0,
                endHeaders: flags & H2.endHeadersFlag != 0,
                block: payload,
                padding: padding,
                priority: priority
            )
        case H2.priority:
            guard streamID != 0 else { throw HTTP2ConnectionError(code: H2.protocolError) }
            guard payload.readableBytes == 5, let dependency = payload.readInteger(as: UInt32.self),
                let weight = payload.readInteger(as: UInt8.self)
            else { throw HTTP2ConnectionError(code: H2.frameSizeError) }
            return .priority(
                streamID: streamID,
                .init(exclusive: dependency & 0x8000_0000 != 0, dependency: Int32(bitPattern: dependency & 0x7fff_ffff), weight: weight)
            )
        case H2.rstStream:
            guard streamID != 0 else { throw HTTP2ConnectionError(code: H2.protocolError) }
            guard payload.readableBytes == 4, let code = payload.readInteger(as: UInt32.self) else {
                throw HTTP2ConnectionError(code: H2.frameSizeError)
            }
            return .rstStream(streamID: streamID, code: code)
        case H2.settings:
            guard streamID == 0 else { throw HTTP2ConnectionError(code: H2.protocolError) }
            let ack = flags & H2.ackFlag != 0
            guard payload.readableBytes % 6 == 0, !ack || payload.readableBytes == 0 else {
                throw HTTP2ConnectionError(code: H2.frameSizeError)
            }
            var settings: [HTTP2Frame.Setting] = []
            settings.reserveCapacity(payload.readableBytes / 6)
            while let parameter = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
                settings.append(.init(parameter: parameter, value: value))
            }
            return .settings(ack: ack, settings)
        case H2.pushPromise:
            guard streamID != 0 else { throw HTTP2ConnectionError(code: H2.protocolError) }
            _ = try stripPadding(flags: flags, &payload)
            guard let promised = payload.readInteger(as: UInt32.self) else { throw HTTP2ConnectionError(code: H2.frameSizeError) }
            return .pushPromise(streamID: streamID, promisedStreamID: Int32(bitPattern: promised & 0x7fff_ffff))
        case H2.ping:
            guard streamID == 0 else { throw HTTP2ConnectionError(code: H2.protocolError) }
            guard payload.readableBytes == 8, let data = payload.readInteger(as: UInt64.self) else {
                throw HTTP2ConnectionError(code: H2.frameSizeError)
            }
            return .ping(ack: flags & H2.ackFlag != 0, data: data)
        case H2.goAway:
            guard streamID == 0 else { throw HTTP2ConnectionError(code: H2.protocolError) }
            guard let last = payload.readInteger(as: UInt32.self), let code = payload.readInteger(as: UInt32.self) else {
                throw HTTP2ConnectionError(code: H2.frameSizeError)
            }
            return .goAway(lastStreamID: Int32(bitPattern: last & 0x7fff_ffff), code: code, debugData: payload)
        case H2.windowUpdate:
            guard payload.readableBytes == 4, let raw = payload.readInteger(as: UInt32.self) else {
                throw HTTP2ConnectionError(code: H2.frameSizeError)
            }
            return .windowUpdate(streamID: streamID, increment: Int(raw & 0x7fff_ffff))
        case H2.continuation:
            guard streamID != 0 else { throw HTTP2ConnectionError(code: H2.protocolError) }
            return .continuation(streamID: streamID, endHeaders: flags & H2.endHeadersFlag != 0, block: payload)
        default:
            return .unknown(type: type, flags: flags, streamID: streamID, payload: payload)
        }
    }

    /// Removes the pad length byte and the padding; a pad as long as the payload or longer is a
    /// PROTOCOL_ERROR (RFC 9113 §6.1).
    private static func stripPadding(flags: UInt8, _ payload: inout ByteBuffer) throws(HTTP2ConnectionError) -> Int? {
        guard flags & H2.paddedFlag != 0 else { return nil }
        guard let padding = payload.readInteger(as: UInt8.self), Int(padding) <= payload.readableBytes else {
            throw HTTP2ConnectionError(code: H2.protocolError)
        }
        payload.moveWriterIndex(to: payload.writerIndex - Int(padding))
        return Int(padding)
    }
}

/// Writes frames. Payloads are written as given: splitting to the peer's frame size is the
/// caller's (the state machine's) decision, except for header blocks (`writeHeaders`).
enum HTTP2FrameEncoder {
    static func writeFrameHeader(length: Int, type: UInt8, flags: UInt8, streamID: Int32, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt32(truncatingIfNeeded: length) << 8 | UInt32(type))
        buffer.writeInteger(flags)
        buffer.writeInteger(UInt32(bitPattern: streamID))
    }

    static func write(_ frame: HTTP2Frame, into buffer: inout ByteBuffer) {
        switch frame {
        case .data(let streamID, let endStream, let payload, let padding):
            let flags = (endStream ? H2.endStreamFlag : 0) | (padding != nil ? H2.paddedFlag : 0)
            let length = payload.readableBytes + (padding.map { $0 + 1 } ?? 0)
            writeFrameHeader(length: length, type: H2.data, flags: flags, streamID: streamID, into: &buffer)
            if let padding { buffer.writeInteger(UInt8(truncatingIfNeeded: padding)) }
            buffer.writeImmutableBuffer(payload)
            if let padding { buffer.writeRepeatingByte(0, count: padding) }
        case .headers(let streamID, let endStream, let endHeaders, let block, let padding, let priority):
            var flags = (endStream ? H2.endStreamFlag : 0) | (endHeaders ? H2.endHeadersFlag : 0)
            if padding != nil { flags |= H2.paddedFlag }
            if priority != nil { flags |= H2.priorityFlag }
            let length = block.readableBytes + (padding.map { $0 + 1 } ?? 0) + (priority != nil ? 5 : 0)
            writeFrameHeader(length: length, type: H2.headers, flags: flags, streamID: streamID, into: &buffer)
            if let padding { buffer.writeInteger(UInt8(truncatingIfNeeded: padding)) }
            if let priority { write(priority, into: &buffer) }
            buffer.writeImmutableBuffer(block)
            if let padding { buffer.writeRepeatingByte(0, count: padding) }
        case .priority(let streamID, let priority):
            writeFrameHeader(length: 5, type: H2.priority, flags: 0, streamID: streamID, into: &buffer)
            write(priority, into: &buffer)
        case .rstStream(let streamID, let code):
            writeFrameHeader(length: 4, type: H2.rstStream, flags: 0, streamID: streamID, into: &buffer)
            buffer.writeInteger(code)
        case .settings(let ack, let settings):
            writeFrameHeader(length: settings.count * 6, type: H2.settings, flags: ack ? H2.ackFlag : 0, streamID: 0, into: &buffer)
            for setting in settings {
                buffer.writeInteger(setting.parameter)
                buffer.writeInteger(setting.value)
            }
        case .pushPromise(let streamID, let promised):
            writeFrameHeader(length: 4, type: H2.pushPromise, flags: H2.endHeadersFlag, streamID: streamID, into: &buffer)
            buffer.writeInteger(UInt32(bitPattern: promised))
        case .ping(let ack, let data):
            writeFrameHeader(length: 8, type: H2.ping, flags: ack ? H2.ackFlag : 0, streamID: 0, into: &buffer)
            buffer.writeInteger(data)
        case .goAway(let lastStreamID, let code, let debugData):
            writeFrameHeader(length: 8 + debugData.readableBytes, type: H2.goAway, flags: 0, streamID: 0, into: &buffer)
            buffer.writeInteger(UInt32(bitPattern: lastStreamID))
            buffer.writeInteger(code)
            buffer.writeImmutableBuffer(debugData)
        case .windowUpdate(let streamID, let increment):
            writeFrameHeader(length: 4, type: H2.windowUpdate, flags: 0, streamID: streamID, into: &buffer)
            buffer.writeInteger(UInt32(truncatingIfNeeded: increment) & 0x7fff_ffff)
        case .continuation(let streamID, let endHeaders, let block):
            writeFrameHeader(length: block.readableBytes, type: H2.continuation, flags: endHeaders ? H2.endHeadersFlag : 0, streamID: streamID, into: &buffer)
            buffer.writeImmutableBuffer(block)
        case .unknown(let type, let flags, let streamID, let payload):
            writeFrameHeader(length: payload.readableBytes, type: type, flags: flags, streamID: streamID, into: &buffer)
            buffer.writeImmutableBuffer(payload)
        }
    }

    private static func write(_ priority: HTTP2Frame.Priority, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt32(bitPattern: priority.dependency) | (priority.exclusive ? 0x8000_0000 : 0))
        buffer.writeInteger(priority.weight)
    }

    /// A DATA frame header followed by `payload` (the hot path: no enum on the way).
    @inline(__always)
    static func writeData(streamID: Int32, endStream: Bool, payload: ByteBuffer, into buffer: inout ByteBuffer) {
        writeFrameHeader(length: payload.readableBytes, type: H2.data, flags: endStream ? H2.endStreamFlag : 0, streamID: streamID, into: &buffer)
        buffer.writeImmutableBuffer(payload)
    }

    /// A header block as HEADERS, followed by CONTINUATION frames when the block is larger than
    /// `maxFrameSize`. `encode` writes the block; it is encoded in place, without a copy, when it fits.
    static func writeHeaders(
        streamID: Int32,
        endStream: Bool,
        maxFrameSize: Int,
        into buffer: inout ByteBuffer,
        encode: (inout ByteBuffer) -> Void
    ) {
        let frameStart = beginHeaders(streamID: streamID, endStream: endStream, into: &buffer)
        encode(&buffer)
        endHeaders(frameStart: frameStart, streamID: streamID, endStream: endStream, maxFrameSize: maxFrameSize, in: &buffer)
    }

    /// `writeHeaders` in two steps, for a caller that encodes the block itself between them:
    /// writes a HEADERS frame header and returns where it starts.
    @inline(__always)
    static func beginHeaders(streamID: Int32, endStream: Bool, into buffer: inout ByteBuffer) -> Int {
        let frameStart = buffer.writerIndex
        let flags = H2.endHeadersFlag | (endStream ? H2.endStreamFlag : 0)
        writeFrameHeader(length: 0, type: H2.headers, flags: flags, streamID: streamID, into: &buffer)
        return frameStart
    }

    /// Sets the length of the HEADERS frame begun at `frameStart` to the block written after it,
    /// or splits the block into HEADERS and CONTINUATION frames when it is larger than `maxFrameSize`.
    @inline(__always)
    static func endHeaders(frameStart: Int, streamID: Int32, endStream: Bool, maxFrameSize: Int, in buffer: inout ByteBuffer) {
        let length = buffer.writerIndex - frameStart - H2.frameHeaderSize
        if length <= maxFrameSize {
            buffer.setInteger(UInt32(truncatingIfNeeded: length) << 8 | UInt32(H2.headers), at: frameStart)
            return
        }
        guard let slice = buffer.getSlice(at: frameStart + H2.frameHeaderSize, length: length) else { return }
        var block = ByteBuffer(bytes: slice.readableBytesView)  // a copy: the bytes below are rewritten
        buffer.moveWriterIndex(to: frameStart)
        var type = H2.headers
        var flags = endStream ? H2.endStreamFlag : 0
        while block.readableBytes > 0 {
            let chunk = min(block.readableBytes, maxFrameSize)
            let last = chunk == block.readableBytes
            writeFrameHeader(length: chunk, type: type, flags: flags | (last ? H2.endHeadersFlag : 0), streamID: streamID, into: &buffer)
            if let slice = block.readSlice(length: chunk) { buffer.writeImmutableBuffer(slice) }
            type = H2.continuation
            flags = 0
        }
    }
}
