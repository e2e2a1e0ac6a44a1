import NIOCore

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
