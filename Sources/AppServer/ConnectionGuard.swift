import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Sits in each connection's pipeline just after HTTP decoding and bounds how
/// long a client may take: a complete request head within `headerTimeout`
/// of the connection opening (or of the previous answer), and the rest of the
/// request within `bodyTimeout` of its head. A client that sends its headers
/// a byte a second, or opens a connection and says nothing, is disconnected.
///
/// It also answers a request the HTTP parser refused (a head over the size
/// limit, bytes that are not HTTP) with the same JSON error body as every
/// other refusal, then closes the connection.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let headerTimeout: TimeAmount
    private let bodyTimeout: TimeAmount
    private let counter: ConnectionCounter
    /// The peer address counted in `counter`, until the connection closes.
    private var counted: String?
    /// When the connection is closed unless the client has done its part by
    /// then; nil while the server owes the answer.
    private var deadline: NIODeadline?
    /// The one timer of the connection and when it fires (at or before
    /// `deadline`). A request moves the deadline, not the timer: the timer
    /// fires, finds the deadline later and sets itself again, so a connection
    /// serving many requests schedules a timer about once per `headerTimeout`
    /// instead of twice per request.
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?
    /// Between an inbound head and its end.
    private var inRequest = false
    /// Answers owed (more than one when a client pipelines requests).
    private var owed = 0
    private var idle: Bool { !inRequest && owed == 0 }

    init(headerTimeout: Duration, bodyTimeout: Duration, counter: ConnectionCounter) {
        self.counter = counter
        self.headerTimeout = .nanoseconds(Int64(headerTimeout.components.seconds) * 1_000_000_000
                                          + Int64(headerTimeout.components.attoseconds / 1_000_000_000))
        self.bodyTimeout = .nanoseconds(Int64(bodyTimeout.components.seconds) * 1_000_000_000
                                        + Int64(bodyTimeout.components.attoseconds / 1_000_000_000))
    }

    private func arm(_ context: ChannelHandlerContext, _ amount: TimeAmount) {
        let at = NIODeadline.now() + amount
        deadline = at
        if let timer {
            guard timer.at > at else { return }
            timer.task.cancel()
        }
        schedule(context, at)
    }

    private func schedule(_ context: ChannelHandlerContext, _ at: NIODeadline) {
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: at) { [self] in
            timer = nil
            guard let deadline else { return }
            if deadline <= .now() {
                context.close(promise: nil)
            } else {
                schedule(context, deadline)
            }
        }
        timer = (task, at)
    }

    private func disarm() {
        deadline = nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    /// Counts the connection against its address and starts the head deadline;
    /// one connection too many from an address is closed at once.
    private func start(_ context: ChannelHandlerContext) {
        if counted == nil, let address = context.channel.remoteAddress?.ipAddress.map(ClientAddress.normalized) {
            guard counter.opened(address) else {
                context.close(promise: nil)
                return
            }
            counted = address
        }
        arm(context, headerTimeout)
    }

    private func stop() {
        disarm()
        timer?.task.cancel()
        timer = nil
        if let address = counted {
            counter.closed(address)
            counted = nil
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            inRequest = true
            owed += 1
            arm(context, bodyTimeout)
        case .body:
            break
        case .end:
            // The request is in; the answer is the server's to bound.
            inRequest = false
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            owed = max(0, owed - 1)
            if idle { arm(context, headerTimeout) }
        }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parse = error as? HTTPParserError, idle else {
            context.fireErrorCaught(error)
            return
        }
        disarm()
        let refusal: AppServerError
        switch parse {
        case .headerOverflow:
            refusal = AppServerError(status: .requestHeaderFieldsTooLarge, code: "headers_too_large",
                                  message: "the request head is larger than the server accepts")
        default:
            refusal = AppServerError(status: .badRequest, code: "malformed_http", message: "the request is not valid HTTP/1.1")
        }
        let body = refusal.body
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.contentLength] = "\(body.count)"
        fields[.connection] = "close"
        context.write(wrapOutboundOut(.head(HTTPResponse(status: refusal.status, headerFields: fields))), promise: nil)
        context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
