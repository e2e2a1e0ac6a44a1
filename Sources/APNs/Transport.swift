import NIOCore
import NIOHPACK

/// One request (one attempt) handed to the event loop.
struct OutboundRequest: Sendable {
    var head: RequestHead
    var body: ByteBuffer
    var endpoint: Endpoint
    var deadline: NIODeadline
    var continuation: CheckedContinuation<AttemptOutcome, Never>

    func complete(_ outcome: AttemptOutcome) {
        continuation.resume(returning: outcome)
    }
}

/// What one attempt came to, as seen by the transport.
enum AttemptOutcome: Sendable {
    /// An HTTP answer: status, `apns-id` header, body (APNs's JSON error body, if any).
    case response(status: Int, body: ByteBuffer?)
    /// The server said it did not process the stream (GOAWAY with a lower last stream id,
    /// or REFUSED_STREAM): safe to send again, and not a failed attempt.
    case notProcessed
    /// Connecting failed or the connection/stream was lost before an answer.
    case connectionFailed
    /// No answer before the request's deadline.
    case timedOut
    /// The client is shutting down.
    case shutdown
}

protocol APNsConnectionDelegate: AnyObject {
    /// The server's first SETTINGS arrived: the connection can take streams.
    func connectionBecameReady(_ connection: APNsConnectionHandler)
    /// Streams finished or the server raised its stream limit.
    func connectionHasCapacity(_ connection: APNsConnectionHandler)
    /// GOAWAY received (or stream ids used up): no new streams on it.
    func connectionIsDraining(_ connection: APNsConnectionHandler)
    /// The channel closed (or never opened).
    func connectionClosed(_ connection: APNsConnectionHandler, wasReady: Bool)
}

/// HTTP/2 frame types and codes the client uses (RFC 7540 §6, §7, §11).
enum H2 {
    static let data: UInt8 = 0x0
    static let headers: UInt8 = 0x1
    static let rstStream: UInt8 = 0x3
    static let settings: UInt8 = 0x4
    static let pushPromise: UInt8 = 0x5
    static let ping: UInt8 = 0x6
    static let goAway: UInt8 = 0x7
    static let windowUpdate: UInt8 = 0x8
    static let continuation: UInt8 = 0x9

    static let endStream: UInt8 = 0x1
    static let ack: UInt8 = 0x1
    static let endHeaders: UInt8 = 0x4
    static let padded: UInt8 = 0x8
    static let priority: UInt8 = 0x20

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

    static let defaultWindow = 65_535
    static let maxWindow = Int(Int32.max)
    /// The largest frame we accept (we keep SETTINGS_MAX_FRAME_SIZE at its default).
    static let localMaxFrameSize = 16_384
    /// SETTINGS_INITIAL_WINDOW_SIZE we announce for the server's answers.
    static let localStreamWindow = 1 << 20
    /// The connection-level receive window we keep.
    static let localConnectionWindow = 1 << 24
}

/// The client's HTTP/2 connection, written directly on TLS: connection preface and SETTINGS,
/// HEADERS (+ CONTINUATION) and DATA on stream ids it assigns itself, flow control both ways,
/// answers decoded with `HPACKDecoder`, the server's stream limit, GOAWAY, PING and RST_STREAM.
/// All frames written during one event-loop tick go out as one buffer with one flush.
/// Lives on the client's event loop; every method is called there.
final class APNsConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum State { case connecting, ready, draining, closed }

    /// What is kept of a request once its HEADERS are written.
    private struct Stream {
        var continuation: CheckedContinuation<AttemptOutcome, Never>
        var deadline: NIODeadline
        var status: Int?
        var body: ByteBuffer?
        /// DATA not yet sent for lack of flow-control window.
        var pendingBody: ByteBuffer?
        var sendWindow: Int
        /// DATA bytes received on this stream since its last WINDOW_UPDATE.
        var unacknowledgedBytes = 0

        func complete(_ outcome: AttemptOutcome) {
            continuation.resume(returning: outcome)
        }
    }

    weak var delegate: APNsConnectionDelegate?
    let endpoint: Endpoint
    private(set) var state: State = .connecting
    private var context: ChannelHandlerContext?
    private var streams: [Int32: Stream] = [:]
    private var nextStreamID: Int32 = 1
    private let localStreamLimit: Int
    private var serverStreamLimit: Int?
    private var goAwayLastStreamID: Int32?
    private var flushScheduled = false
    private var capacityNotificationPending = false
    private var readSinceLastPing = false
    private var pingSentAt: NIODeadline?
    private var lastPingCheck = NIODeadline.now()
    private var outcomeOnClose: AttemptOutcome = .connectionFailed
    private var prefaceWritten = false

    // Output: every frame of this tick, written once. HEADERS and control frames first, then
    // DATA (and RST_STREAM), as NIOHTTP2 orders them: the server sees the tick's streams open
    // together rather than one after another.
    private var out = ByteBuffer()
    private var dataOut = ByteBuffer()
    // Input: bytes of a frame not complete yet.
    private var inbound = ByteBuffer()

    // HPACK
    private var encoder = RequestHeaderEncoder()
    private var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
    /// A header block waiting for its CONTINUATION frames.
    private var partialHeaderBlock: (streamID: Int32, endStream: Bool, block: ByteBuffer)?

    // Flow control
    private var peerInitialWindow = H2.defaultWindow
    private var peerMaxFrameSize = 16_384
    private var connectionSendWindow = H2.defaultWindow
    /// Streams with DATA waiting for window, in order.
    private var blockedStreams = CircularBuffer<Int32>()
    /// DATA bytes received since the last connection-level WINDOW_UPDATE.
    private var unacknowledgedInboundBytes = 0

    init(endpoint: Endpoint, localStreamLimit: Int) {
        self.endpoint = endpoint
        self.localStreamLimit = max(1, localStreamLimit)
    }

    /// Streams this connection can take now.
    var availableStreams: Int {
        guard state == .ready else { return 0 }
        let limit = min(localStreamLimit, serverStreamLimit ?? localStreamLimit)
        return limit - streams.count
    }

    var inFlight: Int { streams.count }

    // MARK: Writing

    func send(_ request: OutboundRequest) {
        guard state == .ready, let context else {
            request.complete(.notProcessed)
            return
        }
        let streamID = nextStreamID
        nextStreamID += 2
        writeHeaders(request.head, streamID: streamID)
        var stream = Stream(continuation: request.continuation, deadline: request.deadline, sendWindow: peerInitialWindow)
        let length = request.body.readableBytes
        if blockedStreams.isEmpty, length <= connectionSendWindow, length <= stream.sendWindow,
            length <= peerMaxFrameSize
        {
            Self.writeFrameHeader(length: length, type: H2.data, flags: H2.endStream, streamID: streamID, into: &dataOut)
            dataOut.writeImmutableBuffer(request.body)
            connectionSendWindow -= length
            stream.sendWindow -= length
            streams[streamID] = stream
        } else {
            stream.pendingBody = request.body
            streams[streamID] = stream
            blockedStreams.append(streamID)
            sendBlockedData()
        }
        scheduleFlush(context: context)
        if nextStreamID > Int32.max - 2 {
            // Stream ids used up: let this connection finish and open a new one.
            state = .draining
            delegate?.connectionIsDraining(self)
        }
    }

    private func writeFrameHeader(length: Int, type: UInt8, flags: UInt8, streamID: Int32) {
        Self.writeFrameHeader(length: length, type: type, flags: flags, streamID: streamID, into: &out)
    }

    private static func writeFrameHeader(length: Int, type: UInt8, flags: UInt8, streamID: Int32, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt32(truncatingIfNeeded: length) << 8 | UInt32(type))
        buffer.writeInteger(flags)
        buffer.writeInteger(UInt32(bitPattern: streamID))
    }

    private func writeHeaders(_ head: RequestHead, streamID: Int32) {
        let frameStart = out.writerIndex
        writeFrameHeader(length: 0, type: H2.headers, flags: H2.endHeaders, streamID: streamID)
        encoder.encode(head, into: &out)
        let length = out.writerIndex - frameStart - 9
        if length <= peerMaxFrameSize {
            out.setInteger(UInt32(truncatingIfNeeded: length) << 8 | UInt32(H2.headers), at: frameStart)
            return
        }
        // A block larger than a frame: HEADERS then CONTINUATION frames.
        guard var block = out.getSlice(at: frameStart + 9, length: length) else { return }
        block = ByteBuffer(bytes: block.readableBytesView)  // a copy: the bytes below are rewritten
        out.moveWriterIndex(to: frameStart)
        var type = H2.headers
        while block.readableBytes > 0 {
            let chunk = min(block.readableBytes, peerMaxFrameSize)
            let last = chunk == block.readableBytes
            writeFrameHeader(length: chunk, type: type, flags: last ? H2.endHeaders : 0, streamID: streamID)
            if let slice = block.readSlice(length: chunk) { out.writeImmutableBuffer(slice) }
            type = H2.continuation
        }
    }

    /// Sends what flow control allows of the waiting bodies, oldest first.
    private func sendBlockedData() {
        while let streamID = blockedStreams.first {
            guard var stream = streams[streamID], var body = stream.pendingBody else {
                blockedStreams.removeFirst()
                continue
            }
            while true {
                let chunk = min(body.readableBytes, connectionSendWindow, stream.sendWindow, peerMaxFrameSize)
                let last = chunk == body.readableBytes
                guard chunk > 0 || last else { break }
                Self.writeFrameHeader(
                    length: chunk,
                    type: H2.data,
                    flags: last ? H2.endStream : 0,
                    streamID: streamID,
                    into: &dataOut
                )
                if let slice = body.readSlice(length: chunk) { dataOut.writeImmutableBuffer(slice) }
                connectionSendWindow -= chunk
                stream.sendWindow -= chunk
                if last { break }
            }
            if body.readableBytes == 0 {
                stream.pendingBody = nil
                streams[streamID] = stream
                blockedStreams.removeFirst()
            } else {
                stream.pendingBody = body
                streams[streamID] = stream
                if connectionSendWindow <= 0 { return }
                // This stream waits for its own window; let the others go.
                blockedStreams.removeFirst()
                blockedStreams.append(streamID)
                if blockedStreams.allSatisfy({ (streams[$0]?.sendWindow ?? 1) <= 0 }) { return }
            }
        }
    }

    private func writeRstStream(_ streamID: Int32, code: UInt32) {
        // After the stream's DATA of this tick.
        Self.writeFrameHeader(length: 4, type: H2.rstStream, flags: 0, streamID: streamID, into: &dataOut)
        dataOut.writeInteger(code)
    }

    private func writeWindowUpdate(_ streamID: Int32, increment: Int) {
        writeFrameHeader(length: 4, type: H2.windowUpdate, flags: 0, streamID: streamID)
        out.writeInteger(UInt32(truncatingIfNeeded: increment))
    }

    private func writePreface() {
        guard !prefaceWritten, let context else { return }
        prefaceWritten = true
        out.writeStaticString("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        writeFrameHeader(length: 18, type: H2.settings, flags: 0, streamID: 0)
        for (parameter, value) in [
            (H2.settingMaxConcurrentStreams, 100),
            (H2.settingInitialWindowSize, H2.localStreamWindow),
            (H2.settingEnablePush, 0),
        ] {
            out.writeInteger(parameter)
            out.writeInteger(UInt32(value))
        }
        // Raise the connection-level receive window from 64 KiB to 16 MiB.
        writeWindowUpdate(0, increment: H2.localConnectionWindow - H2.defaultWindow)
        scheduleFlush(context: context)
    }

    private func scheduleFlush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            bound.value.flushOutput()
        }
    }

    private func flushOutput() {
        flushScheduled = false
        if dataOut.readableBytes > 0 {
            out.writeImmutableBuffer(dataOut)
            dataOut.clear()
        }
        guard state != .closed, let context, out.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
        out.clear()
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        out = context.channel.allocator.buffer(capacity: 16 * 1024)
        dataOut = context.channel.allocator.buffer(capacity: 64 * 1024)
        decoder = HPACKDecoder(allocator: context.channel.allocator)
        if context.channel.isActive { writePreface() }
    }

    func channelActive(context: ChannelHandlerContext) {
        writePreface()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        let wasReady = state == .ready || state == .draining
        state = .closed
        self.context = nil
        failAll(outcomeOnClose)
        delegate?.connectionClosed(self, wasReady: wasReady)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if state != .closed {
            let wasReady = state == .ready || state == .draining
            state = .closed
            failAll(outcomeOnClose)
            delegate?.connectionClosed(self, wasReady: wasReady)
        }
        self.context = nil
    }

    /// The last error the pipeline reported (TLS handshake failures show up here).
    private(set) var lastError: Error?

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        lastError = error
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        readSinceLastPing = true
        if inbound.readableBytes == 0 {
            inbound = buffer
        } else {
            inbound.writeBuffer(&buffer)
        }
        readFrames(context: context)
    }

    private func readFrames(context: ChannelHandlerContext) {
        while inbound.readableBytes >= 9, state != .closed {
            let start = inbound.readerIndex
            guard let lengthAndType = inbound.getInteger(at: start, as: UInt32.self),
                let flags = inbound.getInteger(at: start + 4, as: UInt8.self),
                let rawStreamID = inbound.getInteger(at: start + 5, as: UInt32.self)
            else { return }
            let length = Int(lengthAndType >> 8)
            if length > H2.localMaxFrameSize {
                connectionError(H2.frameSizeError, context: context)
                return
            }
            guard inbound.readableBytes >= 9 + length,
                let payload = inbound.getSlice(at: start + 9, length: length)
            else { break }
            inbound.moveReaderIndex(forwardBy: 9 + length)
            let type = UInt8(truncatingIfNeeded: lengthAndType)
            let streamID = Int32(bitPattern: rawStreamID & 0x7fff_ffff)
            handleFrame(type: type, flags: flags, streamID: streamID, payload: payload, context: context)
        }
        if inbound.readableBytes == 0 {
            inbound = ByteBuffer()
        } else if inbound.readerIndex > 64 * 1024 {
            inbound.discardReadBytes()
        }
    }

    private func handleFrame(type: UInt8, flags: UInt8, streamID: Int32, payload: ByteBuffer, context: ChannelHandlerContext) {
        if let partial = partialHeaderBlock {
            guard type == H2.continuation, streamID == partial.streamID else {
                connectionError(H2.protocolError, context: context)
                return
            }
            var block = partial.block
            var payload = payload
            block.writeBuffer(&payload)
            if flags & H2.endHeaders != 0 {
                partialHeaderBlock = nil
                headerBlockComplete(streamID: streamID, endStream: partial.endStream, block: block, context: context)
            } else {
                partialHeaderBlock = (streamID, partial.endStream, block)
            }
            return
        }
        switch type {
        case H2.data:
            receivedData(flags: flags, streamID: streamID, payload: payload, context: context)
        case H2.headers:
            var block = payload
            if flags & H2.padded != 0 {
                guard let padding = block.readInteger(as: UInt8.self), Int(padding) <= block.readableBytes else {
                    connectionError(H2.protocolError, context: context)
                    return
                }
                block.moveWriterIndex(to: block.writerIndex - Int(padding))
            }
            if flags & H2.priority != 0 {
                guard block.readableBytes >= 5 else {
                    connectionError(H2.frameSizeError, context: context)
                    return
                }
                block.moveReaderIndex(forwardBy: 5)
            }
            let endStream = flags & H2.endStream != 0
            if flags & H2.endHeaders != 0 {
                headerBlockComplete(streamID: streamID, endStream: endStream, block: block, context: context)
            } else {
                partialHeaderBlock = (streamID, endStream, ByteBuffer(bytes: block.readableBytesView))
            }
        case H2.rstStream:
            guard let code = payload.getInteger(at: payload.readerIndex, as: UInt32.self) else {
                connectionError(H2.frameSizeError, context: context)
                return
            }
            guard let stream = streams.removeValue(forKey: streamID) else { return }
            if code == H2.refusedStream {
                stream.complete(.notProcessed)
            } else if code == H2.noError, let status = stream.status {
                // The answer came complete but without END_STREAM: take it.
                stream.complete(.response(status: status, body: stream.body))
            } else {
                stream.complete(.connectionFailed)
            }
            capacityNotificationPending = true
            if state == .draining { closeIfDrained() }
        case H2.settings:
            guard flags & H2.ack == 0 else { return }
            receivedSettings(payload, context: context)
        case H2.ping:
            guard payload.readableBytes == 8 else {
                connectionError(H2.frameSizeError, context: context)
                return
            }
            if flags & H2.ack != 0 {
                pingSentAt = nil
            } else {
                writeFrameHeader(length: 8, type: H2.ping, flags: H2.ack, streamID: 0)
                out.writeImmutableBuffer(payload)
                scheduleFlush(context: context)
            }
        case H2.goAway:
            guard let lastStreamID = payload.getInteger(at: payload.readerIndex, as: UInt32.self) else {
                connectionError(H2.frameSizeError, context: context)
                return
            }
            receivedGoAway(lastStreamID: Int32(bitPattern: lastStreamID & 0x7fff_ffff))
        case H2.windowUpdate:
            guard let raw = payload.getInteger(at: payload.readerIndex, as: UInt32.self) else {
                connectionError(H2.frameSizeError, context: context)
                return
            }
            let increment = Int(raw & 0x7fff_ffff)
            if streamID == 0 {
                connectionSendWindow += increment
                if connectionSendWindow > H2.maxWindow {
                    connectionError(H2.flowControlError, context: context)
                    return
                }
            } else if streams[streamID] != nil {
                streams[streamID]?.sendWindow += increment
            }
            if !blockedStreams.isEmpty {
                sendBlockedData()
                scheduleFlush(context: context)
            }
        case H2.pushPromise, H2.continuation:
            // Push is disabled; a CONTINUATION here follows no HEADERS.
            connectionError(H2.protocolError, context: context)
        default:
            // PRIORITY and unknown frame types are ignored.
            break
        }
    }

    private func receivedData(flags: UInt8, streamID: Int32, payload: ByteBuffer, context: ChannelHandlerContext) {
        let flowControlled = payload.readableBytes
        var chunk = payload
        if flags & H2.padded != 0 {
            guard let padding = chunk.readInteger(as: UInt8.self), Int(padding) <= chunk.readableBytes else {
                connectionError(H2.protocolError, context: context)
                return
            }
            chunk.moveWriterIndex(to: chunk.writerIndex - Int(padding))
        }
        unacknowledgedInboundBytes += flowControlled
        if unacknowledgedInboundBytes >= H2.localConnectionWindow / 2 {
            writeWindowUpdate(0, increment: unacknowledgedInboundBytes)
            unacknowledgedInboundBytes = 0
            scheduleFlush(context: context)
        }
        guard var stream = streams[streamID] else { return }
        if chunk.readableBytes > 0 {
            if stream.body == nil {
                stream.body = ByteBuffer(bytes: chunk.readableBytesView)
            } else {
                stream.body?.writeBuffer(&chunk)
            }
        }
        if flags & H2.endStream != 0 {
            streams.removeValue(forKey: streamID)
            finish(stream, streamID: streamID, context: context)
            return
        }
        stream.unacknowledgedBytes += flowControlled
        if stream.unacknowledgedBytes >= H2.localStreamWindow / 2 {
            writeWindowUpdate(streamID, increment: stream.unacknowledgedBytes)
            stream.unacknowledgedBytes = 0
            scheduleFlush(context: context)
        }
        streams[streamID] = stream
    }

    private func headerBlockComplete(streamID: Int32, endStream: Bool, block: ByteBuffer, context: ChannelHandlerContext) {
        let status: Int?
        if let quick = Self.quickStatus(of: block) {
            status = quick
        } else {
            var block = block
            do {
                // Every other block is decoded, known stream or not, to keep the dynamic table in step.
                status = Self.status(of: try decoder.decodeHeaders(from: &block))
            } catch {
                connectionError(H2.compressionError, context: context)
                return
            }
        }
        if endStream {
            guard var stream = streams.removeValue(forKey: streamID) else { return }
            if stream.status == nil { stream.status = status }
            finish(stream, streamID: streamID, context: context)
        } else if let status, status >= 200 {
            // Interim (1xx) answers are skipped; trailers keep the first status.
            if streams[streamID]?.status == nil { streams[streamID]?.status = status }
        }
    }

    private func receivedSettings(_ payload: ByteBuffer, context: ChannelHandlerContext) {
        guard payload.readableBytes % 6 == 0 else {
            connectionError(H2.frameSizeError, context: context)
            return
        }
        var payload = payload
        var windowsChanged = false
        while let parameter = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
            switch parameter {
            case H2.settingHeaderTableSize:
                encoder.peerTableSizeChanged(Int(value))
            case H2.settingMaxConcurrentStreams:
                serverStreamLimit = Int(value)
            case H2.settingInitialWindowSize:
                guard Int(value) <= H2.maxWindow else {
                    connectionError(H2.flowControlError, context: context)
                    return
                }
                let delta = Int(value) - peerInitialWindow
                peerInitialWindow = Int(value)
                if delta != 0 {
                    for key in streams.keys { streams[key]?.sendWindow += delta }
                    windowsChanged = true
                }
            case H2.settingMaxFrameSize:
                guard value >= 16_384, value <= 16_777_215 else {
                    connectionError(H2.protocolError, context: context)
                    return
                }
                peerMaxFrameSize = Int(value)
            default:
                break
            }
        }
        writeFrameHeader(length: 0, type: H2.settings, flags: H2.ack, streamID: 0)
        if windowsChanged, !blockedStreams.isEmpty { sendBlockedData() }
        scheduleFlush(context: context)
        if state == .connecting {
            state = .ready
            delegate?.connectionBecameReady(self)
        } else {
            capacityNotificationPending = true
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if capacityNotificationPending {
            capacityNotificationPending = false
            if state == .ready { delegate?.connectionHasCapacity(self) }
        }
        context.fireChannelReadComplete()
    }

    /// A connection error: GOAWAY with the code, then close.
    private func connectionError(_ code: UInt32, context: ChannelHandlerContext) {
        guard state != .closed else { return }
        Self.writeFrameHeader(length: 8, type: H2.goAway, flags: 0, streamID: 0, into: &dataOut)
        dataOut.writeInteger(UInt32(0))
        dataOut.writeInteger(code)
        flushOutput()
        inbound = ByteBuffer()
        context.close(promise: nil)
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

    private func finish(_ stream: Stream, streamID: Int32, context: ChannelHandlerContext) {
        if stream.pendingBody != nil {
            // Answered before the whole body was sent: stop sending it.
            writeRstStream(streamID, code: H2.noError)
            scheduleFlush(context: context)
        }
        stream.complete(.response(status: stream.status ?? 0, body: stream.body))
        capacityNotificationPending = true
        if state == .draining { closeIfDrained() }
    }

    private func receivedGoAway(lastStreamID: Int32) {
        goAwayLastStreamID = min(lastStreamID, goAwayLastStreamID ?? lastStreamID)
        let wasDraining = state == .draining
        if state == .ready || state == .connecting { state = .draining }
        let dropped = streams.keys.filter { $0 > lastStreamID }
        for streamID in dropped {
            if let stream = streams.removeValue(forKey: streamID) { stream.complete(.notProcessed) }
        }
        if !wasDraining { delegate?.connectionIsDraining(self) }
        closeIfDrained()
    }

    private func closeIfDrained() {
        guard state == .draining, streams.isEmpty, let context else { return }
        flushOutput()
        context.close(promise: nil)
    }

    private func failAll(_ outcome: AttemptOutcome) {
        blockedStreams.removeAll()
        guard !streams.isEmpty else { return }
        let all = streams
        streams.removeAll()
        for (_, stream) in all { stream.complete(outcome) }
    }

    // MARK: Timers (called by the pool's tick)

    /// Times out overdue streams and keeps the connection alive with PING when idle.
    func tick(now: NIODeadline, pingInterval: TimeAmount) {
        guard let context, state != .closed else { return }
        var expired: [Int32] = []
        for (streamID, stream) in streams where stream.deadline <= now {
            expired.append(streamID)
        }
        for streamID in expired {
            guard let stream = streams.removeValue(forKey: streamID) else { continue }
            writeRstStream(streamID, code: H2.cancel)
            stream.complete(.timedOut)
            capacityNotificationPending = true
        }
        if !expired.isEmpty { scheduleFlush(context: context) }

        if let sentAt = pingSentAt {
            if now - sentAt > min(pingInterval, .seconds(10)) {
                // No PING ack: the connection is dead.
                context.close(promise: nil)
                return
            }
        } else if now - lastPingCheck >= pingInterval {
            if !readSinceLastPing, state == .ready || state == .draining {
                pingSentAt = now
                writeFrameHeader(length: 8, type: H2.ping, flags: 0, streamID: 0)
                out.writeInteger(UInt64(0))
                scheduleFlush(context: context)
            }
            readSinceLastPing = false
            lastPingCheck = now
        }
        if capacityNotificationPending, state == .ready {
            capacityNotificationPending = false
            delegate?.connectionHasCapacity(self)
        }
        closeIfDrained()
    }

    /// Fails every stream with `.shutdown` and closes.
    func shutdown() {
        outcomeOnClose = .shutdown
        failAll(.shutdown)
        if let context {
            state = .draining
            context.close(promise: nil)
        }
    }
}
