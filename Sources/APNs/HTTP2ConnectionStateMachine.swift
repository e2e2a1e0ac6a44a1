import NIOCore

/// The client side of one HTTP/2 connection, with no I/O: it takes events (frames read, send
/// requests, timer ticks, the channel closing) and answers with actions (streams to complete,
/// whether to close, what the pool should know). Frames to write accumulate in an output buffer
/// the owner takes with `takeOutput()` and writes once per event-loop tick.
///
/// Rules kept here: stream ids (odd, rising; a connection whose ids run out drains), the server's
/// stream limit, flow control both ways (connection and stream windows, SETTINGS_INITIAL_WINDOW_SIZE
/// changes, WINDOW_UPDATE), answers (HEADERS + CONTINUATION, DATA), RST_STREAM codes, GOAWAY
/// (streams above the last stream id were not processed), PING (answered; sent when idle; a missing
/// ack closes), request deadlines and connection errors (GOAWAY with the code, then close).
///
/// `Pending` is what the owner completes a stream with (a continuation in the client, a plain
/// value in tests).
struct HTTP2ConnectionStateMachine<Pending> {
    enum State: Equatable { case connecting, ready, draining, closed }

    /// What the pool hears about.
    enum Notice: Equatable {
        /// The server's first SETTINGS arrived: the connection can take streams.
        case becameReady
        /// GOAWAY received or stream ids used up: no new streams on it.
        case draining
    }

    /// What the owner does after an event, in this order: complete the streams, tell the pool,
    /// then close the channel (after writing the output) when `close` is set.
    struct Actions {
        var completions: Completions = .init()
        var notice: Notice?
        /// Streams finished or the server raised its limit: waiting requests may fit now.
        var capacityChanged = false
        var close = false
    }

    /// Streams to complete, without an allocation for the common single one.
    struct Completions {
        private var first: (Pending, AttemptOutcome)?
        /// Nil rather than empty: no array at all on the common path.
        private var rest: [(Pending, AttemptOutcome)]?

        init() {}

        var isEmpty: Bool { first == nil }
        var count: Int { first == nil ? 0 : 1 + (rest?.count ?? 0) }

        mutating func append(_ pending: Pending, _ outcome: AttemptOutcome) {
            if first == nil {
                first = (pending, outcome)
            } else if rest == nil {
                rest = [(pending, outcome)]
            } else {
                rest?.append((pending, outcome))
            }
        }

        /// Calls `body` for each, in order.
        func forEach(_ body: (Pending, AttemptOutcome) -> Void) {
            guard let first else { return }
            body(first.0, first.1)
            guard let rest else { return }
            for (pending, outcome) in rest { body(pending, outcome) }
        }

        var all: [(Pending, AttemptOutcome)] {
            var all: [(Pending, AttemptOutcome)] = []
            forEach { all.append(($0, $1)) }
            return all
        }
    }

    /// What is kept of a request once its HEADERS are written.
    private struct Stream {
        var pending: Pending
        var deadline: NIODeadline
        var status: Int?
        var body: ByteBuffer?
        /// DATA not yet sent for lack of flow-control window.
        var pendingBody: ByteBuffer?
        var sendWindow: Int
        /// DATA bytes received on this stream since its last WINDOW_UPDATE.
        var unacknowledgedBytes = 0
    }

    /// SETTINGS_MAX_CONCURRENT_STREAMS we announce (the server never opens streams to us).
    static var announcedMaxConcurrentStreams: Int { 100 }
    /// SETTINGS_INITIAL_WINDOW_SIZE we announce for the server's answers.
    static var localStreamWindow: Int { 1 << 20 }
    /// The connection-level receive window we keep.
    static var localConnectionWindow: Int { 1 << 24 }

    private(set) var state: State = .connecting
    private var streams: [Int32: Stream] = [:]
    private var nextStreamID: Int32
    private let localStreamLimit: Int
    private var serverStreamLimit: Int?
    private var goAwayLastStreamID: Int32?
    private var prefaceWritten = false
    private var outcomeOnClose: AttemptOutcome = .connectionFailed
    /// A connection error was sent: nothing more is read or sent before the channel closes.
    private var failed = false

    // PING
    private var readSinceLastPing = false
    private var pingSentAt: NIODeadline?
    private var lastPingCheck: NIODeadline

    // Output: HEADERS and control frames first, then DATA and RST_STREAM, as NIOHTTP2 orders
    // them: the server sees the tick's streams open together rather than one after another.
    private var out: ByteBuffer
    private var dataOut: ByteBuffer

    // HPACK
    private var encoder = RequestHeaderEncoder()
    private var statusReader: ResponseStatusReader
    /// A header block waiting for its CONTINUATION frames.
    private var partialHeaderBlock: (streamID: Int32, endStream: Bool, block: ByteBuffer)?

    // Flow control
    private(set) var peerInitialWindow = H2.defaultWindow
    private(set) var peerMaxFrameSize = H2.defaultMaxFrameSize
    private(set) var connectionSendWindow = H2.defaultWindow
    /// Streams with DATA waiting for window, in order.
    private var blockedStreams = CircularBuffer<Int32>()
    /// DATA bytes received since the last connection-level WINDOW_UPDATE.
    private var unacknowledgedInboundBytes = 0
    /// What the server may still send us on the connection before our next WINDOW_UPDATE.
    private var connectionReceiveWindow = H2.defaultWindow

    /// `firstStreamID` other than 1 is for tests of running out of stream ids.
    init(
        localStreamLimit: Int,
        now: NIODeadline,
        allocator: ByteBufferAllocator = ByteBufferAllocator(),
        firstStreamID: Int32 = 1
    ) {
        self.localStreamLimit = max(1, localStreamLimit)
        self.lastPingCheck = now
        self.nextStreamID = firstStreamID
        self.out = allocator.buffer(capacity: 16 * 1024)
        self.dataOut = allocator.buffer(capacity: 64 * 1024)
        self.statusReader = ResponseStatusReader(allocator: allocator)
    }

    /// Streams this connection can take now.
    var availableStreams: Int {
        guard state == .ready else { return 0 }
        let limit = min(localStreamLimit, serverStreamLimit ?? localStreamLimit)
        return limit - streams.count
    }

    var inFlight: Int { streams.count }
    var isReadyOrDraining: Bool { state == .ready || state == .draining }
    var hasOutput: Bool { out.readableBytes > 0 || dataOut.readableBytes > 0 }

    /// The frames written since the last call, as one buffer.
    mutating func takeOutput() -> ByteBuffer? {
        if dataOut.readableBytes > 0 {
            out.writeImmutableBuffer(dataOut)
            dataOut.clear()
        }
        guard out.readableBytes > 0 else { return nil }
        let bytes = out
        out.clear()
        return bytes
    }

    // MARK: Events

    /// The channel is active: the connection preface, our SETTINGS and a larger connection window.
    mutating func channelActive() {
        guard !prefaceWritten, state != .closed else { return }
        prefaceWritten = true
        out.writeStaticString(H2.clientPreface)
        HTTP2FrameEncoder.write(
            .settings(
                ack: false,
                [
                    .init(parameter: H2.settingMaxConcurrentStreams, value: UInt32(Self.announcedMaxConcurrentStreams)),
                    .init(parameter: H2.settingInitialWindowSize, value: UInt32(Self.localStreamWindow)),
                    .init(parameter: H2.settingEnablePush, value: 0),
                ]
            ),
            into: &out
        )
        // Raise the connection-level receive window from 64 KiB to 16 MiB.
        let increment = Self.localConnectionWindow - H2.defaultWindow
        HTTP2FrameEncoder.write(.windowUpdate(streamID: 0, increment: increment), into: &out)
        connectionReceiveWindow += increment
    }

    /// Opens a stream for a request: HEADERS, then as much of the body as flow control allows.
    /// A connection that is not ready answers `.notProcessed` at once.
    mutating func send(_ pending: Pending, head: RequestHead, body: ByteBuffer, deadline: NIODeadline) -> Actions {
        var actions = Actions()
        guard state == .ready, !failed else {
            actions.completions.append(pending, .notProcessed)
            return actions
        }
        let streamID = nextStreamID
        nextStreamID += 2
        let frameStart = HTTP2FrameEncoder.beginHeaders(streamID: streamID, endStream: false, into: &out)
        encoder.encode(head, into: &out)
        HTTP2FrameEncoder.endHeaders(frameStart: frameStart, streamID: streamID, endStream: false, maxFrameSize: peerMaxFrameSize, in: &out)
        var stream = Stream(pending: pending, deadline: deadline, sendWindow: peerInitialWindow)
        let length = body.readableBytes
        if blockedStreams.isEmpty, length <= connectionSendWindow, length <= stream.sendWindow, length <= peerMaxFrameSize {
            HTTP2FrameEncoder.writeData(streamID: streamID, endStream: true, payload: body, into: &dataOut)
            connectionSendWindow -= length
            stream.sendWindow -= length
            streams[streamID] = stream
        } else {
            stream.pendingBody = body
            streams[streamID] = stream
            blockedStreams.append(streamID)
            sendBlockedData()
        }
        if nextStreamID > Int32.max - 2 {
            // Stream ids used up: let this connection finish and open a new one.
            state = .draining
            actions.notice = .draining
        }
        return actions
    }

    /// A frame the decoder read.
    mutating func receive(_ frame: HTTP2Frame) -> Actions {
        var actions = Actions()
        guard state != .closed, !failed else { return actions }
        readSinceLastPing = true
        if let partial = partialHeaderBlock {
            guard case .continuation(let streamID, let endHeaders, var fragment) = frame, streamID == partial.streamID else {
                connectionError(H2.protocolError, &actions)
                return actions
            }
            var block = partial.block
            block.writeBuffer(&fragment)
            if endHeaders {
                partialHeaderBlock = nil
                headerBlockComplete(streamID: streamID, endStream: partial.endStream, block: block, &actions)
            } else {
                partialHeaderBlock = (streamID, partial.endStream, block)
            }
            return actions
        }
        switch frame {
        case .data(let streamID, let endStream, let payload, _):
            receivedData(streamID: streamID, endStream: endStream, payload: payload, flowControlled: frame.flowControlledLength, &actions)
        case .headers(let streamID, let endStream, let endHeaders, let block, _, _):
            if endHeaders {
                headerBlockComplete(streamID: streamID, endStream: endStream, block: block, &actions)
            } else {
                partialHeaderBlock = (streamID, endStream, ByteBuffer(bytes: block.readableBytesView))
            }
        case .rstStream(let streamID, let code):
            receivedRstStream(streamID: streamID, code: code, &actions)
        case .settings(let ack, let settings):
            guard !ack else { break }
            receivedSettings(settings, &actions)
        case .ping(let ack, let data):
            if ack {
                pingSentAt = nil
            } else {
                HTTP2FrameEncoder.write(.ping(ack: true, data: data), into: &out)
            }
        case .goAway(let lastStreamID, _, _):
            receivedGoAway(lastStreamID: lastStreamID, &actions)
        case .windowUpdate(let streamID, let increment):
            receivedWindowUpdate(streamID: streamID, increment: increment, &actions)
        case .pushPromise, .continuation:
            // Push is disabled; a CONTINUATION here follows no HEADERS.
            connectionError(H2.protocolError, &actions)
        case .priority, .unknown:
            // PRIORITY and unknown frame types are ignored.
            break
        }
        return actions
    }

    /// The decoder found bytes that are not a valid frame.
    mutating func framingError(_ error: HTTP2ConnectionError) -> Actions {
        var actions = Actions()
        connectionError(error.code, &actions)
        return actions
    }

    /// Times out overdue streams (RST_STREAM CANCEL) and keeps an idle connection alive with
    /// PING; a PING left unanswered for `min(pingInterval, 10 s)` closes the connection.
    mutating func tick(now: NIODeadline, pingInterval: TimeAmount) -> Actions {
        var actions = Actions()
        guard state != .closed, prefaceWritten, !failed else { return actions }
        var expired: [Int32] = []
        for (streamID, stream) in streams where stream.deadline <= now {
            expired.append(streamID)
        }
        for streamID in expired.sorted() {
            guard let stream = streams.removeValue(forKey: streamID) else { continue }
            HTTP2FrameEncoder.write(.rstStream(streamID: streamID, code: H2.cancel), into: &dataOut)
            actions.completions.append(stream.pending, .timedOut)
            actions.capacityChanged = true
        }
        if !expired.isEmpty { blockedStreams.removeAll { streams[$0] == nil } }

        if let sentAt = pingSentAt {
            if now - sentAt > min(pingInterval, .seconds(10)) {
                // No PING ack: the connection is dead.
                actions.close = true
                return actions
            }
        } else if now - lastPingCheck >= pingInterval {
            if !readSinceLastPing, isReadyOrDraining {
                pingSentAt = now
                HTTP2FrameEncoder.write(.ping(ack: false, data: 0), into: &out)
            }
            readSinceLastPing = false
            lastPingCheck = now
        }
        closeIfDrained(&actions)
        return actions
    }

    /// The channel closed: every open stream fails (`.connectionFailed`, or `.shutdown` after
    /// `shutdown()`). `wasReady` tells a connection that never got going from one that did.
    mutating func channelInactive() -> (actions: Actions, wasReady: Bool) {
        var actions = Actions()
        guard state != .closed else { return (actions, true) }
        let wasReady = isReadyOrDraining
        state = .closed
        failAll(outcomeOnClose, &actions)
        out.clear()
        dataOut.clear()
        return (actions, wasReady)
    }

    /// Fails every stream with `.shutdown` and closes.
    mutating func shutdown() -> Actions {
        var actions = Actions()
        outcomeOnClose = .shutdown
        failAll(.shutdown, &actions)
        if state != .closed {
            state = .draining
            actions.close = true
        }
        return actions
    }

    // MARK: Frames

    private mutating func receivedData(streamID: Int32, endStream: Bool, payload: ByteBuffer, flowControlled: Int, _ actions: inout Actions) {
        connectionReceiveWindow -= flowControlled
        if connectionReceiveWindow < 0 {
            connectionError(H2.flowControlError, &actions)
            return
        }
        unacknowledgedInboundBytes += flowControlled
        if unacknowledgedInboundBytes >= Self.localConnectionWindow / 2 {
            HTTP2FrameEncoder.write(.windowUpdate(streamID: 0, increment: unacknowledgedInboundBytes), into: &out)
            connectionReceiveWindow += unacknowledgedInboundBytes
            unacknowledgedInboundBytes = 0
        }
        guard var stream = streams[streamID] else { return }
        if payload.readableBytes > 0 {
            if stream.body == nil {
                stream.body = ByteBuffer(bytes: payload.readableBytesView)
            } else {
                var chunk = payload
                stream.body?.writeBuffer(&chunk)
            }
        }
        if endStream {
            streams.removeValue(forKey: streamID)
            finish(stream, streamID: streamID, &actions)
            return
        }
        stream.unacknowledgedBytes += flowControlled
        if stream.unacknowledgedBytes >= Self.localStreamWindow / 2 {
            HTTP2FrameEncoder.write(.windowUpdate(streamID: streamID, increment: stream.unacknowledgedBytes), into: &out)
            stream.unacknowledgedBytes = 0
        }
        streams[streamID] = stream
    }

    private mutating func headerBlockComplete(streamID: Int32, endStream: Bool, block: ByteBuffer, _ actions: inout Actions) {
        // Every block is read, known stream or not, to keep the dynamic table in step.
        let status: Int?
        do {
            status = try statusReader.status(of: block)
        } catch {
            connectionError(error.code, &actions)
            return
        }
        if endStream {
            guard var stream = streams.removeValue(forKey: streamID) else { return }
            if stream.status == nil { stream.status = status }
            finish(stream, streamID: streamID, &actions)
        } else if let status, status >= 200 {
            // Interim (1xx) answers are skipped; trailers keep the first status.
            if streams[streamID]?.status == nil { streams[streamID]?.status = status }
        }
    }

    private mutating func receivedRstStream(streamID: Int32, code: UInt32, _ actions: inout Actions) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        if code == H2.refusedStream {
            actions.completions.append(stream.pending, .notProcessed)
        } else if code == H2.noError, let status = stream.status {
            // The answer came complete but without END_STREAM (RFC 9113 §8.1): take it.
            actions.completions.append(stream.pending, .response(status: status, body: stream.body))
        } else {
            actions.completions.append(stream.pending, .connectionFailed)
        }
        if stream.pendingBody != nil { blockedStreams.removeAll { $0 == streamID } }
        actions.capacityChanged = true
        closeIfDrained(&actions)
    }

    private mutating func receivedSettings(_ settings: [HTTP2Frame.Setting], _ actions: inout Actions) {
        var windowsChanged = false
        for setting in settings {
            switch setting.parameter {
            case H2.settingHeaderTableSize:
                encoder.peerTableSizeChanged(Int(setting.value))
            case H2.settingMaxConcurrentStreams:
                serverStreamLimit = Int(setting.value)
            case H2.settingInitialWindowSize:
                let value = Int(setting.value)
                guard value <= H2.maxWindow else {
                    connectionError(H2.flowControlError, &actions)
                    return
                }
                let delta = value - peerInitialWindow
                peerInitialWindow = value
                guard delta != 0 else { break }
                // Every open stream's window moves by the difference (RFC 9113 §6.9.2); it may
                // go negative, but past 2^31-1 is a connection FLOW_CONTROL_ERROR.
                for key in streams.keys {
                    streams[key]?.sendWindow += delta
                    if let window = streams[key]?.sendWindow, window > H2.maxWindow {
                        connectionError(H2.flowControlError, &actions)
                        return
                    }
                }
                windowsChanged = true
            case H2.settingMaxFrameSize:
                guard setting.value >= 16_384, setting.value <= 16_777_215 else {
                    connectionError(H2.protocolError, &actions)
                    return
                }
                peerMaxFrameSize = Int(setting.value)
            case H2.settingEnablePush:
                guard setting.value <= 1 else {
                    connectionError(H2.protocolError, &actions)
                    return
                }
            default:
                break
            }
        }
        HTTP2FrameEncoder.write(.settings(ack: true, []), into: &out)
        if windowsChanged, !blockedStreams.isEmpty { sendBlockedData() }
        if state == .connecting {
            state = .ready
            actions.notice = .becameReady
        } else {
            actions.capacityChanged = true
        }
    }

    private mutating func receivedWindowUpdate(streamID: Int32, increment: Int, _ actions: inout Actions) {
        if streamID == 0 {
            guard increment > 0 else {
                connectionError(H2.protocolError, &actions)
                return
            }
            connectionSendWindow += increment
            if connectionSendWindow > H2.maxWindow {
                connectionError(H2.flowControlError, &actions)
                return
            }
        } else if var stream = streams[streamID] {
            stream.sendWindow += increment
            if increment == 0 || stream.sendWindow > H2.maxWindow {
                // A stream error: this stream ends, the connection goes on (RFC 9113 §6.9, §6.9.1).
                streams.removeValue(forKey: streamID)
                blockedStreams.removeAll { $0 == streamID }
                HTTP2FrameEncoder.write(
                    .rstStream(streamID: streamID, code: increment == 0 ? H2.protocolError : H2.flowControlError),
                    into: &dataOut
                )
                actions.completions.append(stream.pending, .connectionFailed)
                actions.capacityChanged = true
                closeIfDrained(&actions)
                return
            }
            streams[streamID] = stream
        }
        if !blockedStreams.isEmpty { sendBlockedData() }
    }

    private mutating func receivedGoAway(lastStreamID: Int32, _ actions: inout Actions) {
        goAwayLastStreamID = min(lastStreamID, goAwayLastStreamID ?? lastStreamID)
        let wasDraining = state == .draining
        if state == .ready || state == .connecting { state = .draining }
        // Streams above the last stream id were not processed: they go again on a new connection.
        for streamID in streams.keys.filter({ $0 > lastStreamID }).sorted() {
            if let stream = streams.removeValue(forKey: streamID) {
                actions.completions.append(stream.pending, .notProcessed)
            }
        }
        blockedStreams.removeAll { streams[$0] == nil }
        if !wasDraining { actions.notice = .draining }
        closeIfDrained(&actions)
    }

    // MARK: Helpers

    /// Sends what flow control allows of the waiting bodies, oldest first.
    private mutating func sendBlockedData() {
        while let streamID = blockedStreams.first {
            guard var stream = streams[streamID], var body = stream.pendingBody else {
                blockedStreams.removeFirst()
                continue
            }
            while true {
                let chunk = min(body.readableBytes, connectionSendWindow, stream.sendWindow, peerMaxFrameSize)
                let last = chunk == body.readableBytes
                guard chunk > 0 || last else { break }
                if let slice = body.readSlice(length: chunk) {
                    HTTP2FrameEncoder.writeData(streamID: streamID, endStream: last, payload: slice, into: &dataOut)
                }
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

    private mutating func finish(_ stream: Stream, streamID: Int32, _ actions: inout Actions) {
        if stream.pendingBody != nil {
            // Answered before the whole body was sent: stop sending it (RFC 9113 §8.1).
            blockedStreams.removeAll { $0 == streamID }
            HTTP2FrameEncoder.write(.rstStream(streamID: streamID, code: H2.noError), into: &dataOut)
        }
        actions.completions.append(stream.pending, .response(status: stream.status ?? 0, body: stream.body))
        actions.capacityChanged = true
        closeIfDrained(&actions)
    }

    /// A connection error: GOAWAY with the code (after what is already written), then close.
    private mutating func connectionError(_ code: UInt32, _ actions: inout Actions) {
        guard state != .closed, !failed else { return }
        failed = true
        HTTP2FrameEncoder.write(
            .goAway(lastStreamID: 0, code: code, debugData: ByteBuffer()),
            into: &dataOut
        )
        partialHeaderBlock = nil
        actions.close = true
        if state != .draining {
            state = .draining
            actions.notice = .draining
        }
    }

    private func closeIfDrained(_ actions: inout Actions) {
        if state == .draining, streams.isEmpty { actions.close = true }
    }

    private mutating func failAll(_ outcome: AttemptOutcome, _ actions: inout Actions) {
        blockedStreams.removeAll()
        guard !streams.isEmpty else { return }
        for streamID in streams.keys.sorted() {
            if let stream = streams.removeValue(forKey: streamID) { actions.completions.append(stream.pending, outcome) }
        }
    }
}
