import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// All connections of a client, per endpoint and credential, the budget they share, and the timer
/// that ticks them. Lives on the client's event loop.
final class ConnectionPool {
    private let eventLoop: EventLoop
    /// Per credential (by index): the TLS context its connections use, and its name for logs.
    private let sslContexts: [NIOSSLContext]
    private let credentialNames: [String]
    /// Per credential: true for a client certificate.
    private let presentsCertificate: [Bool]
    private let configuration: APNsConfiguration
    private let logger: Logger
    private var hosts: [PoolKey: HostPool] = [:]
    private var budget: ConnectionBudget<PoolKey>
    private var timer: RepeatedTask?
    private(set) var isShutdown = false
    private let pingInterval: TimeAmount
    private let tickInterval: TimeAmount
    /// Completed once a graceful shutdown has let every request finish.
    private var drained: EventLoopPromise<Void>?

    init(
        eventLoop: EventLoop,
        sslContexts: [NIOSSLContext],
        credentialNames: [String],
        presentsCertificate: [Bool],
        configuration: APNsConfiguration,
        logger: Logger
    ) {
        self.eventLoop = eventLoop
        self.sslContexts = sslContexts
        self.credentialNames = credentialNames
        self.presentsCertificate = presentsCertificate
        self.configuration = configuration
        self.logger = logger
        self.budget = ConnectionBudget(limit: configuration.connectionBudget)
        self.pingInterval = TimeAmount(configuration.pingInterval)
        // Often enough to time requests out within a quarter of their deadline and to ping on time.
        let quarterTimeout = TimeAmount(configuration.requestTimeout).nanoseconds / 4
        let halfPing = pingInterval.nanoseconds / 2
        self.tickInterval = .nanoseconds(max(10_000_000, min(1_000_000_000, quarterTimeout, halfPing)))
    }

    /// Connections open or opening over every pool (what the budget counts).
    var openConnections: Int { budget.total }
    /// The most connections open or opening at once so far.
    var peakConnections: Int { budget.peak }
    /// Connections reclaimed for other pools so far: closed when idle, retired when busy.
    var reclaimedConnections: (closedIdle: Int, retired: Int) { (budget.closedIdle, budget.retired) }

    func submit(_ request: OutboundRequest) {
        guard !isShutdown, drained == nil else {
            request.complete(.shutdown)
            return
        }
        if timer == nil { startTimer() }
        hostPool(for: PoolKey(endpoint: request.endpoint, credential: request.credential)).submit(request)
    }

    private var lastHost: (key: PoolKey, pool: HostPool)?

    private func hostPool(for key: PoolKey) -> HostPool {
        // Nearly every request goes to the same pool as the one before: skip the hashing.
        if let lastHost, lastHost.key.credential == key.credential, lastHost.key.endpoint.port == key.endpoint.port,
            lastHost.key.endpoint.host == key.endpoint.host
        {
            return lastHost.pool
        }
        if let existing = hosts[key] {
            lastHost = (key, existing)
            return existing
        }
        let created = HostPool(
            key: key,
            credentialName: credentialNames[key.credential],
            presentsCertificate: presentsCertificate[key.credential],
            eventLoop: eventLoop,
            sslContext: sslContexts[key.credential],
            configuration: configuration,
            logger: logger
        )
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        created.becameIdle = { bound.value.checkDrained() }
        created.owner = self
        hosts[key] = created
        lastHost = (key, created)
        return created
    }

    // MARK: The budget (see `ConnectionBudget`)

    /// A pool needs a connection: true when it may open one now; else it waits for `slotGranted`.
    func acquireSlot(_ key: PoolKey) -> Bool {
        if budget.acquire(key) { return true }
        rebalance()
        return false
    }

    /// A connection of `key` closed or failed to open: its slot goes to a waiting pool.
    func releaseSlot(_ key: PoolKey, reclaimed: Bool) {
        var next = budget.released(key, reclaimed: reclaimed)
        while let pool = next {
            if !isShutdown, let host = hosts[pool], host.slotGranted() { break }
            next = budget.released(pool, reclaimed: false)
        }
        rebalance()
    }

    /// A reclaim chosen by `rebalance` found nothing to close after all (it changed meanwhile).
    func releaseReclaimFailed() {
        budget.reclaimAbandoned()
    }

    /// True when some pool waits for a slot (then idle connections are worth reporting).
    var hasPoolsWaitingForSlot: Bool { !budget.waiting.isEmpty }

    /// Reclaims connections for the pools waiting for a slot, when there are any to reclaim.
    func rebalance() {
        guard !isShutdown, budget.waiting.count > budget.reclaiming else { return }
        let now = NIODeadline.now()
        let candidates = hosts.values.map { $0.budgetCandidate(now: now) }
        for reclaim in budget.reclaims(candidates: candidates) {
            switch reclaim {
            case .closeIdle(let key): hosts[key]?.closeIdleConnection()
            case .retire(let key): hosts[key]?.retireConnection()
            }
        }
    }

    private func startTimer() {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        timer = eventLoop.scheduleRepeatedTask(initialDelay: tickInterval, delay: tickInterval) { _ in
            let pool = bound.value
            let now = NIODeadline.now()
            for host in pool.hosts.values { host.tick(now: now, pingInterval: pool.pingInterval) }
            // A connection may have become retirable (served long enough) since the last look.
            pool.rebalance()
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
