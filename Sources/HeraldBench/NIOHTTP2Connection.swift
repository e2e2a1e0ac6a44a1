import APNs
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle


// MARK: - The connection-level handler

/// After `NIOHTTP2Handler`: opens a stream per request with its own stream ids (HEADERS, then
/// DATA with END_STREAM), reads the answers (`:status`, body) and completes the request's
/// continuation; flushes once per event-loop tick.
final class H2Connection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Stream {
        var continuation: CheckedContinuation<H2Attempt, Never>
        var deadline: NIODeadline
        var status: Int?
        var body: ByteBuffer?
    }

    private enum State { case connecting, ready, draining, closed }

    var onReady: (() -> Void)?
    var onCapacity: (() -> Void)?
    var onDraining: (() -> Void)?
    var onClosed: ((Bool) -> Void)?

    private let localStreamLimit: Int
    private var remoteStreamLimit = Int.max
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var nextStreamID: Int32 = 1
    private var state = State.connecting
    private var context: ChannelHandlerContext?
    private let eventLoop: EventLoop
    private var flushScheduled = false
    private var capacityPending = false
    /// Inbound flow control is ours without a stream multiplexer: the connection window is
    /// raised to 16 MiB at start and topped up once half of it is used (as APNsClient does;
    /// answers are far below the 1 MiB stream window we announce, so streams need none).
    private static let connectionWindow = 1 << 24
    private var unacknowledgedInbound = 0

    init(localStreamLimit: Int, eventLoop: EventLoop) {
        self.localStreamLimit = localStreamLimit
        self.eventLoop = eventLoop
        streams.reserveCapacity(localStreamLimit)
    }

    var isConnecting: Bool { state == .connecting }

    var availableStreams: Int {
        guard state == .ready else { return 0 }
        return min(localStreamLimit, remoteStreamLimit) - streams.count
    }

    func send(_ request: H2Request) {
        guard state == .ready, let context else {
            request.continuation.resume(returning: .notProcessed)
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
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(request.body), endStream: true)))),
            promise: nil
        )
        scheduleFlush()
        if nextStreamID > Int32.max - 2 {
            state = .draining
            onDraining?()
        }
    }

    /// Resets and times out the streams past their deadline.
    func expire(now: NIODeadline) {
        guard let context else { return }
        let expired = streams.filter { $0.value.deadline <= now }
        for (streamID, stream) in expired {
            streams.removeValue(forKey: streamID)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
            stream.continuation.resume(returning: .timedOut)
        }
        if !expired.isEmpty {
            scheduleFlush()
            onCapacity?()
            closeIfDrained()
        }
    }

    func close() -> EventLoopFuture<Void> {
        guard let context else { return eventLoop.makeSucceededVoidFuture() }
        failAll(.shutdown)
        state = .closed
        context.close(promise: nil)
        return context.channel.closeFuture
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelActive(context: ChannelHandlerContext) {
        // NIOHTTP2Handler has written the preface and its SETTINGS by now.
        context.write(
            wrapOutboundOut(
                HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: Self.connectionWindow - 65_535))
            ),
            promise: nil
        )
        scheduleFlush()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closed()
    }

    /// The TCP connect failed (the channel may never have had this handler).
    func connectFailed() {
        closed()
    }

    private func closed() {
        guard state != .closed || context != nil else { return }
        let wasReady = state != .connecting
        state = .closed
        failAll(.connectionFailed)
        context = nil
        onClosed?(wasReady)
        onClosed = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // Stream errors end their stream (a StreamClosedEvent follows); anything else ends the connection.
        if error is NIOHTTP2Errors.StreamError { return }
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            if headers.endStream {
                guard var stream = streams.removeValue(forKey: frame.streamID) else { return }
                if stream.status == nil { stream.status = headers.headers.first(name: ":status").flatMap { Int($0) } }
                finish(stream)
            } else if let index = streams.index(forKey: frame.streamID), streams.values[index].status == nil {
                streams.values[index].status = headers.headers.first(name: ":status").flatMap { Int($0) }
            }
        case .data(let data):
            let flowControlled = data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
            if flowControlled > 0 {
                unacknowledgedInbound += flowControlled
                if unacknowledgedInbound >= Self.connectionWindow / 2 {
                    context.write(
                        wrapOutboundOut(
                            HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedInbound))
                        ),
                        promise: nil
                    )
                    unacknowledgedInbound = 0
                    scheduleFlush()
                }
            }
            if case .byteBuffer(var bytes) = data.data, bytes.readableBytes > 0,
                let index = streams.index(forKey: frame.streamID)
            {
                if streams.values[index].body == nil {
                    streams.values[index].body = bytes
                } else {
                    streams.values[index].body!.writeBuffer(&bytes)
                }
            }
            if data.endStream, let stream = streams.removeValue(forKey: frame.streamID) {
                finish(stream)
            }
        case .rstStream(let code):
            guard let stream = streams.removeValue(forKey: frame.streamID) else { return }
            if let status = stream.status {
                // Answered, then reset (a server that did not need the rest of the body).
                stream.continuation.resume(returning: .response(status: status, body: stream.body))
            } else {
                stream.continuation.resume(returning: code == .refusedStream ? .notProcessed : .connectionFailed)
            }
            capacityPending = true
            closeIfDrained()
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                remoteStreamLimit = setting.value
            }
            if state == .connecting {
                state = .ready
                onReady?()
            } else {
                capacityPending = true
            }
        case .goAway(let lastStreamID, _, _):
            if state == .ready || state == .connecting {
                state = .draining
                onDraining?()
            }
            for streamID in streams.keys where streamID > lastStreamID {
                streams.removeValue(forKey: streamID)?.continuation.resume(returning: .notProcessed)
            }
            closeIfDrained()
        default:
            // PING is answered by NIOHTTP2Handler, WINDOW_UPDATE is its business too.
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if capacityPending {
            capacityPending = false
            onCapacity?()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A stream the HTTP/2 layer ended without an answer we saw (a stream error).
        if let closed = event as? StreamClosedEvent, let reason = closed.reason,
            let stream = streams.removeValue(forKey: closed.streamID)
        {
            if let status = stream.status {
                stream.continuation.resume(returning: .response(status: status, body: stream.body))
            } else {
                stream.continuation.resume(returning: reason == .refusedStream ? .notProcessed : .connectionFailed)
            }
            capacityPending = true
            closeIfDrained()
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Helpers

    private func finish(_ stream: Stream) {
        stream.continuation.resume(returning: .response(status: stream.status ?? 0, body: stream.body))
        capacityPending = true
        closeIfDrained()
    }

    private func closeIfDrained() {
        if state == .draining, streams.isEmpty, let context {
            context.close(promise: nil)
        }
    }

    private func failAll(_ outcome: H2Attempt) {
        let all = streams
        streams.removeAll()
        for (_, stream) in all { stream.continuation.resume(returning: outcome) }
    }

    private func scheduleFlush() {
        guard !flushScheduled, let context else { return }
        flushScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let connection = bound.value
            connection.flushScheduled = false
            connection.context?.flush()
        }
    }
}
