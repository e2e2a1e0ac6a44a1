import NIOCore

/// The channel handler of one client connection, on TLS: bytes in go through the frame decoder
/// into the state machine; what the machine decides is carried out here (streams completed, the
/// pool told, the channel closed), and the frames it writes during one event-loop tick go out
/// as one buffer with one flush. Lives on the client's event loop; every method is called there.
final class APNsConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    typealias StateMachine = HTTP2ConnectionStateMachine<CheckedContinuation<AttemptOutcome, Never>>

    weak var delegate: APNsConnectionDelegate?
    let endpoint: Endpoint
    private var machine: StateMachine
    private var decoder = HTTP2FrameDecoder()
    private var context: ChannelHandlerContext?
    private var flushScheduled = false
    private var capacityNotificationPending = false
    private var closing = false

    /// The last error the pipeline reported (TLS handshake failures show up here).
    private(set) var lastError: Error?

    init(endpoint: Endpoint, localStreamLimit: Int) {
        self.endpoint = endpoint
        self.machine = StateMachine(localStreamLimit: localStreamLimit, now: .now())
    }

    var state: StateMachine.State { machine.state }
    /// Streams this connection can take now.
    var availableStreams: Int { machine.availableStreams }
    var inFlight: Int { machine.inFlight }
    /// Since when nothing is in flight (nil while something is): a connection is idle enough to
    /// close for another pool only after a while, not between one answer and the next request.
    private(set) var idleSince: NIODeadline?

    func send(_ request: OutboundRequest) {
        guard context != nil else {
            request.complete(.notProcessed)
            return
        }
        idleSince = nil
        apply(machine.send(request.continuation, head: request.head, body: request.body, deadline: request.deadline))
    }

    /// Times out overdue streams and keeps the connection alive with PING when idle.
    func tick(now: NIODeadline, pingInterval: TimeAmount) {
        guard context != nil else { return }
        apply(machine.tick(now: now, pingInterval: pingInterval))
        if capacityNotificationPending, machine.state == .ready {
            capacityNotificationPending = false
            delegate?.connectionHasCapacity(self)
        }
    }

    /// Fails every stream with `.shutdown` and closes.
    func shutdown() {
        apply(machine.shutdown())
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start() }
    }

    func channelActive(context: ChannelHandlerContext) {
        start()
        context.fireChannelActive()
    }

    private func start() {
        machine.channelActive()
        scheduleFlush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closed()
    }

    private func closed() {
        guard machine.state != .closed else {
            context = nil
            return
        }
        let (actions, wasReady) = machine.channelInactive()
        context = nil
        actions.completions.forEach { $0.resume(returning: $1) }
        delegate?.connectionClosed(self, wasReady: wasReady)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        lastError = error
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        decoder.append(unwrapInboundIn(data))
        while !closing {
            do {
                guard let frame = try decoder.nextFrame() else { break }
                apply(machine.receive(frame))
            } catch {
                apply(machine.framingError(error))
                break
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if capacityNotificationPending {
            capacityNotificationPending = false
            if machine.state == .ready { delegate?.connectionHasCapacity(self) }
        }
        context.fireChannelReadComplete()
    }

    // MARK: Carrying out the machine's actions

    private func apply(_ actions: StateMachine.Actions) {
        actions.completions.forEach { $0.resume(returning: $1) }
        if idleSince == nil, machine.inFlight == 0 { idleSince = .now() }
        if actions.capacityChanged { capacityNotificationPending = true }
        switch actions.notice {
        case .becameReady?: delegate?.connectionBecameReady(self)
        case .draining?: delegate?.connectionIsDraining(self)
        case nil: break
        }
        if actions.close {
            close()
        } else if machine.hasOutput {
            scheduleFlush()
        }
    }

    private func close() {
        guard !closing, let context else { return }
        closing = true
        flushOutput()
        context.close(promise: nil)
    }

    private func scheduleFlush() {
        guard !flushScheduled, let context else { return }
        flushScheduled = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            bound.value.flushOutput()
        }
    }

    private func flushOutput() {
        flushScheduled = false
        guard let context, let output = machine.takeOutput() else { return }
        context.writeAndFlush(wrapOutboundOut(output), promise: nil)
    }
}
