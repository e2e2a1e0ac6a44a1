import NIOCore

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
