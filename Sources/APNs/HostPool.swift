import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// A connection of a host pool, named by identity.
struct ConnectionRef: Hashable {
    let handler: APNsConnectionHandler

    static func == (lhs: ConnectionRef, rhs: ConnectionRef) -> Bool { lhs.handler === rhs.handler }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(handler)) }
}

/// The connections of one endpoint and credential: carries out `ConnectionPoolDecisions`
/// (connects, sends, fails requests), asks the client's budget before opening a connection,
/// gives connections back to it, and logs.
final class HostPool: APNsConnectionDelegate {
    /// A pool's only connection is retired for another pool only after serving this long.
    static let minimumHold = TimeAmount.seconds(1)
    /// A connection counts as idle (closable for another pool) after nothing was in flight this long.
    static let idleGrace = TimeAmount.milliseconds(100)

    private struct Live {
        /// Set once connected.
        var channel: Channel?
        /// Set once HTTP/2 is up.
        var readySince: NIODeadline?
        /// Takes no new streams; closed once its streams are answered.
        var retiring = false
        /// Closed for the budget (another pool gets its slot).
        var reclaimed = false
    }

    let key: PoolKey
    weak var owner: ConnectionPool?
    private let endpoint: Endpoint
    private let eventLoop: EventLoop
    private let sslContext: NIOSSLContext
    /// The credential is a client certificate: a certificate alert in the handshake refuses it.
    private let presentsCertificate: Bool
    private let configuration: APNsConfiguration
    private var logger: Logger
    private var decisions: ConnectionPoolDecisions<OutboundRequest, ConnectionRef>
    /// Every live connection, retiring and draining ones included.
    private var live: [ConnectionRef: Live] = [:]
    /// A connection is wanted and the budget has no slot yet.
    private var awaitingSlot = false
    /// Connections being retired (most of the time none: then no lookup per answer).
    private var retiringCount = 0
    /// Called when nothing waits and nothing is in flight any more (graceful shutdown).
    var becameIdle: (() -> Void)?

    init(
        key: PoolKey,
        credentialName: String,
        presentsCertificate: Bool,
        eventLoop: EventLoop,
        sslContext: NIOSSLContext,
        configuration: APNsConfiguration,
        logger: Logger
    ) {
        self.key = key
        self.presentsCertificate = presentsCertificate
        self.endpoint = key.endpoint
        self.eventLoop = eventLoop
        self.sslContext = sslContext
        self.configuration = configuration
        self.logger = logger
        self.logger[metadataKey: "apns.host"] = "\(key.endpoint.authority)"
        self.logger[metadataKey: "apns.credential"] = "\(credentialName)"
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

    private func carryOut(
        _ decision: ConnectionPoolDecisions<OutboundRequest, ConnectionRef>.FailDecision,
        outcome: AttemptOutcome = .connectionFailed
    ) {
        for request in decision.failed { request.complete(outcome) }
        if decision.openConnection { openConnection() }
        if isIdle { becameIdle?() }
    }

    /// Opens a connection when the client's budget has a slot; else waits for `slotGranted`.
    private func openConnection() {
        guard !awaitingSlot else { return }
        guard let owner else { return }
        if owner.acquireSlot(key) {
            connect()
        } else {
            awaitingSlot = true
            logger.debug("apns connection budget spent; waiting for a slot")
        }
    }

    /// The budget gave this pool a slot: true when it is used (a connection opens), false when
    /// the pool no longer needs one (the caller gives the slot on).
    func slotGranted() -> Bool {
        awaitingSlot = false
        guard decisions.shouldOpenConnection else { return false }
        connect()
        return true
    }

    private func connect() {
        let handler = APNsConnectionHandler(endpoint: endpoint, localStreamLimit: configuration.maxStreamsPerConnection)
        handler.delegate = self
        let connection = ConnectionRef(handler: handler)
        decisions.connectionOpening(connection)
        live[connection] = Live()
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
                pool.live[connection]?.channel = channel
            case .failure(let error):
                pool.logger.warning("apns connect failed", metadata: ["error": "\(String(describing: error))"])
                guard let removed = pool.live.removeValue(forKey: connection) else { return }
                let refused = pool.presentsCertificate && TLSAlert.isCertificateRefusal(error)
                let outcome: AttemptOutcome = refused ? .certificateRejected : .connectionFailed
                pool.carryOut(pool.decisions.connectFailed(connection), outcome: outcome)
                pool.owner?.releaseSlot(pool.key, reclaimed: removed.reclaimed)
            }
        }
    }

    func tick(now: NIODeadline, pingInterval: TimeAmount) {
        for request in decisions.expire(now: now) { request.complete(.timedOut) }
        for (connection, state) in live {
            connection.handler.tick(now: now, pingInterval: pingInterval)
            if state.retiring, connection.handler.inFlight == 0 { connection.handler.shutdown() }
        }
        if isIdle { becameIdle?() }
    }

    func refuseNew() {
        decisions.refuseNew()
    }

    // MARK: Giving connections back to the budget

    /// What the budget needs to know to choose a connection to reclaim here.
    func budgetCandidate(now: NIODeadline) -> ConnectionBudget<PoolKey>.Candidate {
        let taking = live.filter { !$0.value.retiring }
        let ready = taking.filter { $0.value.readySince != nil }
        let idle = decisions.waitingCount == 0 ? ready.filter { Self.isIdle($0.key, now: now) }.count : 0
        var retirable = ready.count
        if taking.count == 1, let since = ready.first?.value.readySince, now - since < Self.minimumHold {
            retirable = 0
        }
        return .init(pool: key, connections: taking.count, idle: idle, retirable: retirable)
    }

    private static func isIdle(_ connection: ConnectionRef, now: NIODeadline) -> Bool {
        guard connection.handler.inFlight == 0, let since = connection.handler.idleSince else { return false }
        return now - since >= idleGrace
    }

    /// Closes a ready connection with nothing in flight (for `idleGrace`), for another pool.
    func closeIdleConnection() {
        let now = NIODeadline.now()
        guard decisions.waitingCount == 0,
            let connection = live.first(where: {
                !$0.value.retiring && $0.value.readySince != nil && Self.isIdle($0.key, now: now)
            })?.key
        else {
            owner?.releaseReclaimFailed()
            return
        }
        live[connection]?.reclaimed = true
        live[connection]?.retiring = true
        retiringCount += 1
        _ = decisions.connectionDraining(connection)
        logger.debug("apns closing an idle connection for another pool")
        connection.handler.shutdown()
    }

    /// Stops giving a connection new streams, and closes it once they are answered, for a pool
    /// that has none.
    func retireConnection() {
        let candidates = live.filter { !$0.value.retiring && $0.value.readySince != nil }
        guard let connection = candidates.min(by: { $0.key.handler.inFlight < $1.key.handler.inFlight })?.key else {
            owner?.releaseReclaimFailed()
            return
        }
        live[connection]?.reclaimed = true
        live[connection]?.retiring = true
        retiringCount += 1
        let reopen = decisions.connectionDraining(connection)
        logger.debug("apns retiring a connection for another pool")
        if connection.handler.inFlight == 0 { connection.handler.shutdown() }
        if reopen { openConnection() }
    }

    // MARK: APNsConnectionDelegate

    func connectionBecameReady(_ handler: APNsConnectionHandler) {
        logger.debug("apns connection ready")
        let connection = ConnectionRef(handler: handler)
        live[connection]?.readySince = .now()
        decisions.connectionReady(connection)
        drainWaiting()
    }

    func connectionHasCapacity(_ handler: APNsConnectionHandler) {
        if retiringCount > 0, live[ConnectionRef(handler: handler)]?.retiring == true {
            if handler.inFlight == 0 { handler.shutdown() }
            return
        }
        if decisions.waitingCount > 0 {
            drainWaiting()
        } else if becameIdle != nil, decisions.isRefusingNew, isIdle {
            becameIdle?()
        }
        if handler.inFlight == 0, decisions.waitingCount == 0, let owner, owner.hasPoolsWaitingForSlot {
            // Idle once `idleGrace` has passed with nothing sent on it: look again then.
            let bound = NIOLoopBound(owner, eventLoop: eventLoop)
            eventLoop.scheduleTask(in: Self.idleGrace + .milliseconds(1)) { bound.value.rebalance() }
        }
    }

    func connectionIsDraining(_ handler: APNsConnectionHandler) {
        logger.debug("apns connection draining (GOAWAY)")
        if decisions.connectionDraining(ConnectionRef(handler: handler)) { openConnection() }
    }

    func connectionClosed(_ handler: APNsConnectionHandler, wasReady: Bool) {
        let connection = ConnectionRef(handler: handler)
        let removed = live.removeValue(forKey: connection)
        if removed?.retiring == true { retiringCount -= 1 }
        if decisions.isShutdown { return }
        var outcome = AttemptOutcome.connectionFailed
        if wasReady {
            logger.debug("apns connection closed")
        } else {
            logger.warning(
                "apns connection closed before HTTP/2 was set up",
                metadata: ["error": "\(handler.lastError.map { String(describing: $0) } ?? "closed by peer")"]
            )
            if presentsCertificate, let error = handler.lastError, TLSAlert.isCertificateRefusal(error) {
                outcome = .certificateRejected
            }
        }
        carryOut(decisions.connectionClosed(connection, wasReady: wasReady), outcome: outcome)
        if let removed { owner?.releaseSlot(key, reclaimed: removed.reclaimed) }
    }

    func shutdown() -> [EventLoopFuture<Void>] {
        for request in decisions.shutdown() { request.complete(.shutdown) }
        var closed: [EventLoopFuture<Void>] = []
        for (connection, state) in live {
            connection.handler.shutdown()
            if let channel = state.channel { closed.append(channel.closeFuture) }
        }
        return closed
    }
}

/// TLS alerts by which a server refuses the client's certificate.
enum TLSAlert {
    /// True when the peer ended the handshake with a certificate alert (BoringSSL names received
    /// alerts `SSLV3_ALERT_…` / `TLSV1_ALERT_…` / `TLSV13_ALERT_…`). A certificate this client
    /// refuses (the server's) is not one: that is a local verification failure. Asked only for
    /// connections that present a client certificate; there DECRYPT_ERROR counts too (a server
    /// answers it when the certificate's signature does not verify against a CA of that name).
    static func isCertificateRefusal(_ error: Error) -> Bool {
        let text = String(describing: error).uppercased()
        guard text.contains("ALERT_") else { return false }
        return ["BAD_CERTIFICATE", "UNSUPPORTED_CERTIFICATE", "CERTIFICATE_REVOKED", "CERTIFICATE_EXPIRED",
                "CERTIFICATE_UNKNOWN", "UNKNOWN_CA", "CERTIFICATE_REQUIRED", "ACCESS_DENIED", "DECRYPT_ERROR"]
            .contains { text.contains("ALERT_" + $0) }
    }
}
