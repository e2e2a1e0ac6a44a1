import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// All connections of a client, per endpoint. Lives on the client's event loop.
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
        guard !isShutdown else {
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

    /// Fails everything waiting or in flight with `.shutdown` and closes every connection.
    func shutdown() -> EventLoopFuture<Void> {
        isShutdown = true
        timer?.cancel()
        timer = nil
        let closed = hosts.values.flatMap { $0.shutdown() }
        hosts.removeAll()
        lastHost = nil
        return EventLoopFuture.andAllComplete(closed, on: eventLoop)
    }
}

/// The connections to one endpoint and the requests waiting for a free stream.
final class HostPool: APNsConnectionDelegate {
    private let endpoint: Endpoint
    private let eventLoop: EventLoop
    private let sslContext: NIOSSLContext
    private let configuration: APNsConfiguration
    private var logger: Logger
    /// Connecting and ready connections (draining ones leave this list).
    private var connections: [APNsConnectionHandler] = []
    /// Every live channel, draining ones included, for shutdown.
    private var channels: [ObjectIdentifier: Channel] = [:]
    private var handlersByID: [ObjectIdentifier: APNsConnectionHandler] = [:]
    private var waiting = CircularBuffer<OutboundRequest>(initialCapacity: 64)
    private var isShutdown = false

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
    }

    func submit(_ request: OutboundRequest) {
        if waiting.isEmpty, let connection = pickConnection() {
            connection.send(request)
            return
        }
        waiting.append(request)
        openConnectionIfNeeded()
    }

    /// The ready connection with the most free streams.
    private func pickConnection() -> APNsConnectionHandler? {
        var best: APNsConnectionHandler?
        var bestFree = 0
        for connection in connections {
            let free = connection.availableStreams
            if free > bestFree {
                best = connection
                bestFree = free
            }
        }
        return best
    }

    private func drainWaiting() {
        while !waiting.isEmpty, let connection = pickConnection() {
            connection.send(waiting.removeFirst())
        }
        openConnectionIfNeeded()
    }

    private func openConnectionIfNeeded() {
        guard !isShutdown, !waiting.isEmpty, connections.count < max(1, configuration.maxConnections),
            !connections.contains(where: { $0.state == .connecting })
        else { return }
        openConnection()
    }

    private func openConnection() {
        let handler = APNsConnectionHandler(
            endpoint: endpoint,
            localStreamLimit: configuration.maxStreamsPerConnection
        )
        handler.delegate = self
        connections.append(handler)
        let id = ObjectIdentifier(handler)
        handlersByID[id] = handler
        logger.debug("apns connecting", metadata: ["apns.connections": "\(connections.count)"])

        let boundHandler = NIOLoopBound(handler, eventLoop: eventLoop)
        let sslContext = self.sslContext
        let serverHostname: String? = endpoint.isIPAddress ? nil : endpoint.host
        let bootstrap = ClientBootstrap(group: eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
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
            let handler = boundHandler.value
            switch result {
            case .success(let channel):
                if handler.state == .closed {
                    // Closed already (TLS failure during connect): connectionClosed handled it.
                    return
                }
                if pool.isShutdown {
                    channel.close(promise: nil)
                    return
                }
                pool.channels[id] = channel
            case .failure(let error):
                pool.logger.warning(
                    "apns connect failed",
                    metadata: ["error": "\(String(describing: error))"]
                )
                pool.removeConnection(handler)
                pool.connectionAttemptFailed()
            }
        }
    }

    private func removeConnection(_ handler: APNsConnectionHandler) {
        connections.removeAll { $0 === handler }
    }

    /// A connection failed before it could take streams. When nothing else can serve the
    /// waiting requests, fail them (their senders back off and try again).
    private func connectionAttemptFailed() {
        if connections.isEmpty {
            let failed = waiting
            waiting.removeAll()
            for request in failed { request.complete(.connectionFailed) }
        } else {
            openConnectionIfNeeded()
        }
    }

    func tick(now: NIODeadline, pingInterval: TimeAmount) {
        while let first = waiting.first, first.deadline <= now {
            waiting.removeFirst().complete(.timedOut)
        }
        for handler in handlersByID.values { handler.tick(now: now, pingInterval: pingInterval) }
    }

    // MARK: APNsConnectionDelegate

    func connectionBecameReady(_ connection: APNsConnectionHandler) {
        logger.debug("apns connection ready")
        drainWaiting()
    }

    func connectionHasCapacity(_ connection: APNsConnectionHandler) {
        if !waiting.isEmpty { drainWaiting() }
    }

    func connectionIsDraining(_ connection: APNsConnectionHandler) {
        logger.debug("apns connection draining (GOAWAY)")
        removeConnection(connection)
        openConnectionIfNeeded()
    }

    func connectionClosed(_ connection: APNsConnectionHandler, wasReady: Bool) {
        let id = ObjectIdentifier(connection)
        channels.removeValue(forKey: id)
        handlersByID.removeValue(forKey: id)
        let wasListed = connections.contains { $0 === connection }
        removeConnection(connection)
        if isShutdown { return }
        if !wasReady {
            logger.warning(
                "apns connection closed before HTTP/2 was set up",
                metadata: ["error": "\(connection.lastError.map { String(describing: $0) } ?? "closed by peer")"]
            )
            if wasListed { connectionAttemptFailed() }
        } else {
            logger.debug("apns connection closed")
            openConnectionIfNeeded()
        }
    }

    func shutdown() -> [EventLoopFuture<Void>] {
        isShutdown = true
        let failed = waiting
        waiting.removeAll()
        for request in failed { request.complete(.shutdown) }
        var closed: [EventLoopFuture<Void>] = []
        for (id, handler) in handlersByID {
            handler.shutdown()
            if let channel = channels[id] { closed.append(channel.closeFuture) }
        }
        connections.removeAll()
        return closed
    }
}
