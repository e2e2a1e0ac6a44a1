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


// MARK: - The pool (on the event loop)

/// The connections of the client and the requests waiting for a stream. Every method runs on
/// the client's event loop.
final class H2Pool {
    private let eventLoop: EventLoop
    private let sslContext: NIOSSLContext
    private let host: String
    private let port: Int
    private let serverHostname: String?
    private let maxConnections: Int
    private let streamsPerConnection: Int
    private var connections: [H2Connection] = []
    private var waiting = CircularBuffer<H2Request>(initialCapacity: 64)
    private var timer: RepeatedTask?
    private var isShutdown = false

    init(
        eventLoop: EventLoop,
        sslContext: NIOSSLContext,
        host: String,
        port: Int,
        serverHostname: String?,
        maxConnections: Int,
        streamsPerConnection: Int
    ) {
        self.eventLoop = eventLoop
        self.sslContext = sslContext
        self.host = host
        self.port = port
        self.serverHostname = serverHostname
        self.maxConnections = maxConnections
        self.streamsPerConnection = streamsPerConnection
    }

    func submit(_ request: H2Request) {
        guard !isShutdown else {
            request.continuation.resume(returning: .shutdown)
            return
        }
        if timer == nil { startTimer() }
        if waiting.isEmpty, let connection = pick() {
            connection.send(request)
            return
        }
        waiting.append(request)
        openIfNeeded()
    }

    /// The ready connection with the most free streams.
    private func pick() -> H2Connection? {
        var best: H2Connection?
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
        while !waiting.isEmpty, let connection = pick() {
            connection.send(waiting.removeFirst())
        }
        openIfNeeded()
    }

    private func openIfNeeded() {
        guard !isShutdown, !waiting.isEmpty, connections.count < maxConnections,
            !connections.contains(where: \.isConnecting)
        else { return }
        let connection = H2Connection(localStreamLimit: streamsPerConnection, eventLoop: eventLoop)
        connections.append(connection)
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        connection.onReady = { bound.value.connectionReady() }
        connection.onCapacity = { bound.value.connectionHasCapacity() }
        connection.onClosed = { [unowned connection] wasReady in bound.value.connectionClosed(connection, wasReady: wasReady) }
        connection.onDraining = { [unowned connection] in bound.value.connectionDraining(connection) }

        let sslContext = self.sslContext
        let serverHostname = self.serverHostname
        let handler = NIOLoopBound(connection, eventLoop: eventLoop)
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        connectionConfiguration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
            HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
            HTTP2Setting(parameter: .enablePush, value: 0),
            HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
        ]
        connectionConfiguration.headerBlockValidation = .disabled
        connectionConfiguration.contentLengthValidation = .disabled
        connectionConfiguration.targetWindowSize = 1 << 24
        let configuration = connectionConfiguration
        ClientBootstrap(group: eventLoop)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                do {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
                    try sync.addHandler(WriteCoalescer(allocator: channel.allocator))
                    try sync.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: configuration))
                    try sync.addHandler(handler.value)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
            .connect(host: host, port: port)
            .whenComplete { result in
                if case .failure(let error) = result {
                    FileHandle.standardError.write(Data("nio-http2: connect failed: \(error)\n".utf8))
                    handler.value.connectFailed()
                }
            }
    }

    private func connectionReady() {
        drainWaiting()
    }

    private func connectionHasCapacity() {
        if !waiting.isEmpty { drainWaiting() }
    }

    private func connectionDraining(_ connection: H2Connection) {
        // No new streams on it; it closes once its streams are answered.
        connections.removeAll { $0 === connection }
        openIfNeeded()
    }

    private func connectionClosed(_ connection: H2Connection, wasReady: Bool) {
        connections.removeAll { $0 === connection }
        if isShutdown { return }
        if !wasReady, connections.isEmpty {
            // Nothing can carry the waiting requests: fail them (their senders retry).
            let failed = Array(waiting)
            waiting.removeAll()
            for request in failed { request.continuation.resume(returning: .connectionFailed) }
            return
        }
        openIfNeeded()
    }

    private func startTimer() {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        timer = eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            let pool = bound.value
            let now = NIODeadline.now()
            while let first = pool.waiting.first, first.deadline <= now {
                pool.waiting.removeFirst().continuation.resume(returning: .timedOut)
            }
            for connection in pool.connections { connection.expire(now: now) }
        }
    }

    func shutdown() -> EventLoopFuture<Void> {
        isShutdown = true
        timer?.cancel()
        timer = nil
        let failed = Array(waiting)
        waiting.removeAll()
        for request in failed { request.continuation.resume(returning: .shutdown) }
        let closing = connections
        connections.removeAll()
        return EventLoopFuture.andAllComplete(closing.map { $0.close() }, on: eventLoop)
    }
}
