import NIOCore
import NIOHPACK
import NIOHTTP2

/// One request (one attempt) handed to the event loop.
struct OutboundRequest: Sendable {
    var headers: HPACKHeaders
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

/// Gathers the buffers written during one event-loop tick into one, so TLS makes one record
/// (NIOHTTP2Handler writes a buffer per frame) and the socket sees one write per flush.
final class WriteCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var pending: ByteBuffer?
    private var pendingPromise: EventLoopPromise<Void>?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .byteBuffer(var buffer):
            if var accumulated = pending {
                pending = nil  // keep the storage uniquely referenced while appending
                accumulated.writeBuffer(&buffer)
                pending = accumulated
            } else {
                pending = buffer
            }
            if let promise {
                if let existing = pendingPromise {
                    existing.futureResult.cascade(to: promise)
                } else {
                    pendingPromise = promise
                }
            }
        case .fileRegion:
            writePending(context: context)
            context.write(data, promise: promise)
        }
    }

    func flush(context: ChannelHandlerContext) {
        writePending(context: context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        writePending(context: context)
        context.close(mode: mode, promise: promise)
    }

    private func writePending(context: ChannelHandlerContext) {
        guard let buffer = pending else { return }
        let promise = pendingPromise
        pending = nil
        pendingPromise = nil
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
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

/// The connection-level HTTP/2 handler of the client: writes HEADERS + DATA frames on stream ids
/// it assigns itself, reads the answers, and tracks the server's stream limit, GOAWAY and PING.
/// Lives on the client's event loop; every method is called there.
final class APNsConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    enum State { case connecting, ready, draining, closed }

    /// What is kept of a request once its frames are written: small, so the dictionary
    /// moves little per frame.
    private struct Stream {
        var continuation: CheckedContinuation<AttemptOutcome, Never>
        var deadline: NIODeadline
        var status: Int?
        var body: ByteBuffer?

        func complete(_ outcome: AttemptOutcome) {
            continuation.resume(returning: outcome)
        }
    }

    weak var delegate: APNsConnectionDelegate?
    let endpoint: Endpoint
    private(set) var state: State = .connecting
    private var context: ChannelHandlerContext?
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var nextStreamID: Int32 = 1
    private let localStreamLimit: Int
    private var serverStreamLimit: Int?
    private var goAwayLastStreamID: HTTP2StreamID?
    private var flushScheduled = false
    private var capacityNotificationPending = false
    private var deferredClosures: [(HTTP2StreamID, HTTP2ErrorCode?)] = []
    private var readSinceLastPing = false
    private var pingSentAt: NIODeadline?
    private var lastPingCheck = NIODeadline.now()
    private var outcomeOnClose: AttemptOutcome = .connectionFailed
    /// DATA bytes received since the last connection-level WINDOW_UPDATE. Without a stream
    /// multiplexer nobody else replenishes the connection window.
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
        let streamID = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        streams[streamID] = Stream(continuation: request.continuation, deadline: request.deadline)
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: request.headers)))),
            promise: nil
        )
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))
            ),
            promise: nil
        )
        scheduleFlush(context: context)
        if nextStreamID > Int32.max - 2 {
            // Stream ids used up: let this connection finish and open a new one.
            state = .draining
            delegate?.connectionIsDraining(self)
        }
    }

    private func scheduleFlush(context: ChannelHandlerContext) {
        guard !flushScheduled else { return }
        flushScheduled = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = bound.value
            handler.flushScheduled = false
            if handler.state != .closed { context.flush() }
        }
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
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
        let frame = unwrapInboundIn(data)
        readSinceLastPing = true
        switch frame.payload {
        case .headers(let headers):
            if headers.endStream {
                guard var stream = streams.removeValue(forKey: frame.streamID) else { return }
                if stream.status == nil { stream.status = Self.status(of: headers.headers) }
                finish(stream)
            } else if let status = Self.status(of: headers.headers), status >= 200 {
                // Interim (1xx) answers are skipped; trailers keep the first status.
                if streams[frame.streamID]?.status == nil { streams[frame.streamID]?.status = status }
            }
        case .data(let data):
            consumedInbound(data.data.readableBytes + (data.paddingBytes ?? 0), context: context)
            guard case .byteBuffer(var chunk) = data.data else { return }
            if chunk.readableBytes > 0, streams[frame.streamID] != nil {
                if streams[frame.streamID]?.body == nil {
                    streams[frame.streamID]?.body = chunk
                } else {
                    streams[frame.streamID]?.body?.writeBuffer(&chunk)
                }
            }
            if data.endStream, let stream = streams.removeValue(forKey: frame.streamID) {
                finish(stream)
            }
        case .rstStream(let code):
            guard let stream = streams.removeValue(forKey: frame.streamID) else { return }
            stream.complete(code == .refusedStream ? .notProcessed : .connectionFailed)
            capacityNotificationPending = true
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                serverStreamLimit = setting.value
            }
            if state == .connecting {
                state = .ready
                widenConnectionWindow(context: context)
                delegate?.connectionBecameReady(self)
            } else {
                capacityNotificationPending = true
            }
        case .goAway(let lastStreamID, _, _):
            receivedGoAway(lastStreamID: lastStreamID, context: context)
        case .ping(_, ack: true):
            pingSentAt = nil
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        processDeferredClosures()
        if capacityNotificationPending {
            capacityNotificationPending = false
            if state == .ready { delegate?.connectionHasCapacity(self) }
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // NIOHTTP2 reports a stream's closure before passing on the frame that closed it; streams
        // dropped by a GOAWAY are reported as cancelled before the GOAWAY frame itself arrives.
        // Decide their fate once the frames of this read are through.
        if let closed = event as? StreamClosedEvent, closed.reason != nil, streams[closed.streamID] != nil {
            deferredClosures.append((closed.streamID, closed.reason))
            if deferredClosures.count == 1 {
                let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
                context.eventLoop.execute { bound.value.processDeferredClosures() }
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func processDeferredClosures() {
        guard !deferredClosures.isEmpty else { return }
        let closures = deferredClosures
        deferredClosures.removeAll()
        for (streamID, reason) in closures {
            guard let stream = streams.removeValue(forKey: streamID) else { continue }
            let unprocessed =
                reason == .refusedStream || (goAwayLastStreamID.map { streamID > $0 } ?? false)
            stream.complete(unprocessed ? .notProcessed : .connectionFailed)
            capacityNotificationPending = true
        }
        if capacityNotificationPending, state == .ready {
            capacityNotificationPending = false
            delegate?.connectionHasCapacity(self)
        }
        closeIfDrained()
    }

    static let connectionWindow = 1 << 24

    /// Raises the connection-level receive window from 64 KiB to 16 MiB.
    private func widenConnectionWindow(context: ChannelHandlerContext) {
        let increment = Self.connectionWindow - 65_535
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil
        )
        scheduleFlush(context: context)
    }

    private func consumedInbound(_ bytes: Int, context: ChannelHandlerContext) {
        unacknowledgedInboundBytes += bytes
        guard unacknowledgedInboundBytes >= Self.connectionWindow / 2 else { return }
        let increment = unacknowledgedInboundBytes
        unacknowledgedInboundBytes = 0
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
            promise: nil
        )
        scheduleFlush(context: context)
    }

    /// `:status` is the first header of an answer (pseudo-headers come first).
    private static func status(of headers: HPACKHeaders) -> Int? {
        for (name, value, _) in headers {
            return name == ":status" ? Int(value) : nil
        }
        return nil
    }

    private func finish(_ stream: Stream) {
        stream.complete(.response(status: stream.status ?? 0, body: stream.body))
        capacityNotificationPending = true
        if state == .draining { closeIfDrained() }
    }

    private func receivedGoAway(lastStreamID: HTTP2StreamID, context: ChannelHandlerContext) {
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
        context.close(promise: nil)
    }

    private func failAll(_ outcome: AttemptOutcome) {
        guard !streams.isEmpty else { return }
        let all = streams
        streams.removeAll()
        for (_, stream) in all { stream.complete(outcome) }
    }

    // MARK: Timers (called by the pool's tick)

    /// Times out overdue streams and keeps the connection alive with PING when idle.
    func tick(now: NIODeadline, pingInterval: TimeAmount) {
        guard let context, state != .closed else { return }
        var expired: [HTTP2StreamID] = []
        for (streamID, stream) in streams where stream.deadline <= now {
            expired.append(streamID)
        }
        for streamID in expired {
            guard let stream = streams.removeValue(forKey: streamID) else { continue }
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
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
                context.write(
                    wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(), ack: false))),
                    promise: nil
                )
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
