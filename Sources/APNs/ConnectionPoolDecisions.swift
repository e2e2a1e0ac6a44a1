import NIOCore

/// The decisions of the connections to one host, with no I/O: which connection takes a request,
/// when requests wait, when to open another connection, and which waiting requests fail (their
/// deadline passed, every connection attempt failed, shutdown). `Connection` names a connection;
/// how many streams each can take now is asked through `free`.
struct ConnectionPoolDecisions<Request, Connection: Hashable> {
    enum SubmitDecision: Equatable {
        /// Send on this connection now.
        case send(Connection)
        /// The request waits (it is kept here); open a connection when `openConnection`.
        case wait(openConnection: Bool)
        /// The pool is shutting down: fail the request with `.shutdown`.
        case refuse
    }

    /// Requests to fail, and whether to open a connection.
    struct FailDecision {
        var failed: [Request] = []
        var openConnection = false
    }

    private struct Waiting {
        var request: Request
        var deadline: NIODeadline
    }

    let maxConnections: Int
    /// Connections that take new streams (connecting or ready), in opening order; draining ones
    /// leave this list.
    private(set) var connections: [Connection] = []
    private var connecting: Set<Connection> = []
    private var waiting = CircularBuffer<Waiting>(initialCapacity: 64)
    /// No new requests are taken (they are refused); waiting ones are still served.
    private(set) var isRefusingNew = false
    private(set) var isShutdown = false

    init(maxConnections: Int) {
        self.maxConnections = max(1, maxConnections)
    }

    var waitingCount: Int { waiting.count }

    /// A new request: straight to the connection with the most free streams when nothing waits,
    /// else to the back of the queue.
    mutating func submit(_ request: Request, deadline: NIODeadline, free: (Connection) -> Int) -> SubmitDecision {
        guard !isRefusingNew, !isShutdown else { return .refuse }
        if waiting.isEmpty, let connection = pick(free: free) {
            return .send(connection)
        }
        waiting.append(Waiting(request: request, deadline: deadline))
        return .wait(openConnection: shouldOpenConnection)
    }

    /// The connection with the most free streams (the first of equals), nil when none has one.
    func pick(free: (Connection) -> Int) -> Connection? {
        var best: Connection?
        var bestFree = 0
        for connection in connections {
            let count = free(connection)
            if count > bestFree {
                best = connection
                bestFree = count
            }
        }
        return best
    }

    /// Waiting requests, oldest first, each with the connection to send it on: as many as the
    /// free streams take (each send uses one). `openConnection` when some still wait.
    mutating func drain(free: (Connection) -> Int) -> (sends: [(Request, Connection)], openConnection: Bool) {
        var sends: [(Request, Connection)] = []
        if !waiting.isEmpty, !isShutdown {
            var capacity = connections.map { (connection: $0, free: free($0)) }
            while !waiting.isEmpty {
                var best: Int?
                for index in capacity.indices where capacity[index].free > 0 {
                    if best.map({ capacity[index].free > capacity[$0].free }) ?? true { best = index }
                }
                guard let best else { break }
                capacity[best].free -= 1
                sends.append((waiting.removeFirst().request, capacity[best].connection))
            }
        }
        return (sends, shouldOpenConnection)
    }

    /// True when requests wait, no connection is being opened and the limit allows another.
    var shouldOpenConnection: Bool {
        !isShutdown && !waiting.isEmpty && connections.count < maxConnections && connecting.isEmpty
    }

    /// The caller opens a connection (after `shouldOpenConnection` or a decision said so).
    mutating func connectionOpening(_ connection: Connection) {
        connections.append(connection)
        connecting.insert(connection)
    }

    /// The connection can take streams: then `drain`.
    mutating func connectionReady(_ connection: Connection) {
        connecting.remove(connection)
    }

    /// GOAWAY or stream ids used up: it takes no new streams; another may be opened.
    mutating func connectionDraining(_ connection: Connection) -> Bool {
        remove(connection)
        return shouldOpenConnection
    }

    /// Connecting failed (TCP, TLS or the connection closed before HTTP/2 was set up). When no
    /// other connection can serve the waiting requests they fail (their senders back off and try
    /// again); otherwise another connection may be opened.
    mutating func connectFailed(_ connection: Connection) -> FailDecision {
        let wasListed = connections.contains(connection)
        remove(connection)
        guard wasListed, !isShutdown else { return FailDecision() }
        if connections.isEmpty {
            let failed = waiting.map(\.request)
            waiting.removeAll()
            return FailDecision(failed: failed, openConnection: false)
        }
        return FailDecision(failed: [], openConnection: shouldOpenConnection)
    }

    /// The channel closed. A connection that never became ready counts as a failed attempt.
    mutating func connectionClosed(_ connection: Connection, wasReady: Bool) -> FailDecision {
        if !wasReady { return connectFailed(connection) }
        remove(connection)
        return FailDecision(failed: [], openConnection: shouldOpenConnection)
    }

    /// Waiting requests whose deadline passed, to fail with `.timedOut`.
    mutating func expire(now: NIODeadline) -> [Request] {
        var expired: [Request] = []
        while let first = waiting.first, first.deadline <= now {
            expired.append(waiting.removeFirst().request)
        }
        return expired
    }

    /// Graceful shutdown begins: new requests are refused, waiting ones are still sent.
    mutating func refuseNew() {
        isRefusingNew = true
    }

    /// Shutdown: every waiting request, to fail with `.shutdown`; nothing is taken afterwards.
    mutating func shutdown() -> [Request] {
        isShutdown = true
        isRefusingNew = true
        let failed = waiting.map(\.request)
        waiting.removeAll()
        connections.removeAll()
        connecting.removeAll()
        return failed
    }

    private mutating func remove(_ connection: Connection) {
        connections.removeAll { $0 == connection }
        connecting.remove(connection)
    }
}
