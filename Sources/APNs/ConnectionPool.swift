import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// All connections of a client, per endpoint, and the timer that ticks them. Lives on the
/// client's event loop.
final class ConnectionPool {
    private let eventLoop: EventLoop
    private let sslContext: NIOSSLContext
    private let configuration: APNsConfiguration
    private let logger: Logger
    private var hosts: [Endpoint: HostPool] = [:]
    private var timer: RepeatedTask?
    private(set) var isShutdown = false
    private let pingInterval: TimeAmount
    private let tickInterval: TimeAmount
    /// Completed once a graceful shutdown has let every request finish.
    private var drained: EventLoopPromise<Void>?

    init(eventLoop: EventLoop, sslContext: NIOSSLContext, configuration: APNsConfiguration, logger: Logger) {
        self.eventLoop = eventLoop
        self.sslContext = sslContext
        self.configuration = configuration
        self.logger = logger
        self.pingInterval = TimeAmount(configuration.pingInterval)
        // Often enough to time requests out within a quarter of their deadline and to ping on time.
        let quarterTimeout = TimeAmount(configuration.requestTimeout).nanoseconds / 4
        let halfPing = pingInterval.nanoseconds / 2
        self.tickInterval = .nanoseconds(max(10_000_000, min(1_000_000_000, quarterTimeout, halfPing)))
    }

    func submit(_ request: OutboundRequest) {
        guard !isShutdown, drained == nil else {
            request.complete(.shutdown)
            return
        }
        if timer == nil { startTimer() }
        hostPool(for: request.endpoint).submit(request)
    }

    private var lastHost: (endpoint: Endpoint, pool: HostPool)?

    private func hostPool(for endpoint: Endpoint) -> HostPool {
        // Nearly every request goes to the same host as the one before: skip the hashing.
        if let lastHost, lastHost.endpoint.port == endpoint.port, lastHost.endpoint.host == endpoint.host {
            return lastHost.pool
        }
        if let existing = hosts[endpoint] {
            lastHost = (endpoint, existing)
            return existing
        }
        let created = HostPool(
            endpoint: endpoint,
            eventLoop: eventLoop,
            sslContext: sslContext,
            configuration: configuration,
            logger: logger
        )
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        created.becameIdle = { bound.value.checkDrained() }
        hosts[endpoint] = created
        lastHost = (endpoint, created)
        return created
    }

    private func startTimer() {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        timer = eventLoop.scheduleRepeatedTask(initialDelay: tickInterval, delay: tickInterval) { _ in
            let pool = bound.value
            let now = NIODeadline.now()
            for host in pool.hosts.values { host.tick(now: now, pingInterval: pool.pingInterval) }
        }
    }

    /// New requests are refused; what waits or is in flight goes on until answered or past its
    /// deadline. The future completes when nothing is left (then `shutdown()` closes).
    func drain() -> EventLoopFuture<Void> {
        if let drained { return drained.futureResult }
        let promise = eventLoop.makePromise(of: Void.self)
        drained = promise
        for host in hosts.values { host.refuseNew() }
        checkDrained()
        return promise.futureResult
    }

    private func checkDrained() {
        guard let drained, hosts.values.allSatisfy(\.isIdle) else { return }
        drained.succeed()
    }

    /// Fails everything waiting or in flight with `.shutdown` and closes every connection.
    func shutdown() -> EventLoopFuture<Void> {
        isShutdown = true
        timer?.cancel()
        timer = nil
        let closed = hosts.values.flatMap { $0.shutdown() }
        hosts.removeAll()
        lastHost = nil
        drained?.succeed()
        return EventLoopFuture.andAllComplete(closed, on: eventLoop)
    }
}

/// A connection of a host pool, named by identity.
struct ConnectionRef: Hashable {
    let handler: APNsConnectionHandler

    static func == (lhs: ConnectionRef, rhs: ConnectionRef) -> Bool { lhs.handler === rhs.handler }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(handler)) }
}

/// The connections to one endpoint: carries out `ConnectionPoolDecisions` (connects, sends,
/// fails requests) and logs.
final class HostPool: APNsConnectionDelegate {
    private let endpoint: Endpoint
    private let eventLoop: EventLoop
    private let sslContext: NIOSSLContext
    private let configuration: APNsConfiguration
    private var logger: Logger
    private var decisions: ConnectionPoolDecisions<OutboundRequest, ConnectionRef>
    /// Every live connection, draining ones included, with its channel once connected.
    private var live: [ConnectionRef: Channel?] = [:]
    /// Called when nothing waits and nothing is in flight any more (graceful shutdown).
    var becameIdle: (() -> Void)?

    init(
        endpoint: Endpoint,
        eventLoop: EventLoop,
        sslContext: NIOSSLContext,
        configuration: APNsConfiguration,
        logger: Logger
    ) {
        self.endpoint = endpoint
        self.eventLoop = eventLoop
        self.sslContext = sslContext
        self.configuration = configuration
        self.logger = logger
        self.logger[metadataKey: "apns.host"] = "\(endpoint.authority)"
        self.decisions = ConnectionPoolDecisions(maxConnections: configuration.maxConnections)
    }

    private static func free(_ connection: ConnectionRef) -> Int { connection.handler.availableStreams }

    var isIdle: Bool {
        decisions.waitingCount == 0 && live.keys.allSatisfy { $0.handler.inFlight == 0 }
    }

    func submit(_ request: OutboundRequest) {
        switch decisions.submit(request, deadline: request.deadline, free: Self.free) {
        case .send(let connection):
            connection.handler.send(request)
        case .wait(let open):
            if open { openConnection() }
        case .refuse:
            request.complete(.shutdown)
        }
    }

    private func drainWaiting() {
        let (sends, open) = decisions.drain(free: Self.free)
        for (request, connection) in sends { connection.handler.send(request) }
        if open { openConnection() }
    }

    private func carryOut(_ decision: ConnectionPoolDecisions<OutboundRequest, ConnectionRef>.FailDecision) {
        for request in decision.failed { request.complete(.connectionFailed) }
        if decision.openConnection { openConnection() }
        if isIdle { becameIdle?() }
    }

    private func openConnection() {
        let handler = APNsConnectionHandler(endpoint: endpoint, localStreamLimit: configuration.maxStreamsPerConnection)
        handler.delegate = self
        let connection = ConnectionRef(handler: handler)
        decisions.connectionOpening(connection)
        live[connection] = .some(nil)
        logger.debug("apns connecting", metadata: ["apns.connections": "\(decisions.connections.count)"])

        let boundHandler = NIOLoopBound(handler, eventLoop: eventLoop)
        let sslContext = self.sslContext
        let serverHostname: String? = endpoint.isIPAddress ? nil : endpoint.host
        let bootstrap = ClientBootstrap(group: eventLoop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(TimeAmount(configuration.connectTimeout))
            .channelInitializer { channel in
                do {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
                    try sync.addHandler(boundHandler.value)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        bootstrap.connect(host: endpoint.host, port: endpoint.port).whenComplete { result in
            let pool = bound.value
            let connection = ConnectionRef(handler: boundHandler.value)
            switch result {
            case .success(let channel):
                guard pool.live[connection] != nil, !pool.decisions.isShutdown else {
                    // Closed already (TLS failure during connect, or shutdown): handled there.
                    channel.close(promise: nil)
                    return
                }
                pool.live[connection] = channel
            case .failure(let error):
                pool.logger.warning("apns connect failed", metadata: ["error": "\(String(describing: error))"])
                pool.live.removeValue(forKey: connection)
                pool.carryOut(pool.decisions.connectFailed(connection))
            }
        }
    }

    func tick(now: NIODeadline, pingInterval: TimeAmount) {
        for request in decisions.expire(now: now) { request.complete(.timedOut) }
        for connection in live.keys { connection.handler.tick(now: now, pingInterval: pingInterval) }
        if isIdle { becameIdle?() }
    }

    func refuseNew() {
        decisions.refuseNew()
    }

    // MARK: APNsConnectionDelegate

    func connectionBecameReady(_ handler: APNsConnectionHandler) {
        logger.debug("apns connection ready")
        decisions.connectionReady(ConnectionRef(handler: handler))
        drainWaiting()
    }

    func connectionHasCapacity(_ handler: APNsConnectionHandler) {
        if decisions.waitingCount > 0 {
            drainWaiting()
        } else if becameIdle != nil, decisions.isRefusingNew, isIdle {
            becameIdle?()
        }
    }

    func connectionIsDraining(_ handler: APNsConnectionHandler) {
        logger.debug("apns connection draining (GOAWAY)")
        if decisions.connectionDraining(ConnectionRef(handler: handler)) { openConnection() }
    }

    func connectionClosed(_ handler: APNsConnectionHandler, wasReady: Bool) {
        let connection = ConnectionRef(handler: handler)
        live.removeValue(forKey: connection)
        if decisions.isShutdown { return }
        if wasReady {
            logger.debug("apns connection closed")
        } else {
            logger.warning(
                "apns connection closed before HTTP/2 was set up",
                metadata: ["error": "\(handler.lastError.map { String(describing: $0) } ?? "closed by peer")"]
            )
        }
        carryOut(decisions.connectionClosed(connection, wasReady: wasReady))
    }

    func shutdown() -> [EventLoopFuture<Void>] {
        for request in decisions.shutdown() { request.complete(.shutdown) }
        var closed: [EventLoopFuture<Void>] = []
        for (connection, channel) in live {
            connection.handler.shutdown()
            if let channel { closed.append(channel.closeFuture) }
        }
        return closed
    }
}
