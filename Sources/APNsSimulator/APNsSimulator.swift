import APNs
import Crypto
import Foundation
import HeraldCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Lifecycle
import ServiceLifecycle

/// An HTTP/2 + TLS server that answers like APNs: validates headers, provider token and payload,
/// answers Apple's status codes and reasons, and injects faults on request.
///
/// A ServiceLifecycle `Service`: `run()` starts (when `start()` was not called already), answers
/// until graceful shutdown, cancellation or `shutdown()`, then stops listening, closes its
/// connections and flushes its log. `start()` binds and returns the port, for callers that need
/// it before running. It lives on one event loop of the group it is given and never shuts it down.
public final class APNsSimulator: Service, Sendable {
    public let configuration: SimulatorConfiguration
    /// The PEM of the CA that clients must trust (nil when given files without a CA path).
    public let caCertificatePath: String?
    /// The PEM of the CA that client certificates must chain to (`issueClientCertificate`).
    public let clientCACertificatePath: String
    let clientCA: ClientCA
    private let logger: Logger
    private let sslContext: NIOSSLContext
    private let eventLoop: EventLoop
    private let stop = StopSignal()
    private let state: NIOLoopBoundBox<SimulatorState>
    private let channel = NIOLockedValueBox<Channel?>(nil)
    /// The channel management API's listener (`SimulatorConfiguration.channelsPort`).
    private let managementChannel = NIOLockedValueBox<Channel?>(nil)
    /// Set once stopped: what `accepted` and `stats` answer from then on (the loop is gone).
    /// Its lock also orders every hand-over to the loop before the loop's shutdown.
    private let final = NIOLockedValueBox<(accepted: [AcceptedNotification], stats: SimulatorStats)?>(nil)

    public init(
        configuration: SimulatorConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "apns-simulator")
    ) throws {
        let material = try TLSMaterial.load(configuration.tls)
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: material.chain.map { .certificate($0) },
            privateKey: .privateKey(material.key)
        )
        tls.applicationProtocols = ["h2"]
        // Client certificates are asked for but optional (token clients send none); one that is
        // presented must chain to the client CA, else the handshake fails.
        tls.certificateVerification = .optionalVerification
        tls.trustRoots = .certificates([try material.clientCA.nioCertificate])
        self.sslContext = try NIOSSLContext(configuration: tls)
        self.caCertificatePath = material.caPath
        self.clientCA = material.clientCA
        self.clientCACertificatePath = material.clientCA.path
        self.configuration = configuration
        self.logger = logger
        self.eventLoop = eventLoopGroup.next()
        self.state = NIOLoopBoundBox.makeBoxSendingValue(
            try SimulatorState(configuration: configuration, logger: logger),
            eventLoop: eventLoop
        )
    }

    /// The bound port, once started.
    public var port: Int? {
        channel.withLockedValue { $0?.localAddress?.port }
    }

    /// The channel management API's bound port, once started (nil: not served).
    public var channelsPort: Int? {
        managementChannel.withLockedValue { $0?.localAddress?.port }
    }

    /// Binds and starts answering. Returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        if let port { return port }
        if let channelsPort = configuration.channelsPort {
            let listener = try await bootstrap(role: .management).bind(host: configuration.host, port: channelsPort).get()
            managementChannel.withLockedValue { $0 = listener }
        }
        let bound = try await bootstrap(role: .push).bind(host: configuration.host, port: configuration.port).get()
        channel.withLockedValue { $0 = bound }
        let state = self.state
        try await eventLoop.submit { state.value.startTimers() }.get()
        let port = bound.localAddress?.port ?? 0
        logger.info("apns simulator listening", metadata: ["host": "\(configuration.host)", "port": "\(port)"])
        return port
    }

    private func bootstrap(role: SimulatorConnectionHandler.Role) -> ServerBootstrap {
        let sslContext = self.sslContext
        let state = self.state
        let configuration = self.configuration
        let initialStreams = configuration.startWithOneStream && role == .push ? 1 : configuration.maxConcurrentStreams
        let bootstrap = ServerBootstrap(group: eventLoop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                do {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    try sync.addHandler(SimulatorWriteCoalescer())
                    try sync.addHandler(
                        NIOHTTP2Handler(
                            mode: .server,
                            initialSettings: [
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: initialStreams),
                                HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                                HTTP2Setting(parameter: .maxHeaderListSize, value: 16384),
                            ],
                            headerBlockValidation: .disabled,
                            contentLengthValidation: .disabled
                        )
                    )
                    let simulatorState = state.value
                    try sync.addHandler(
                        SimulatorConnectionHandler(state: simulatorState, limitedToOne: configuration.startWithOneStream, role: role)
                    )
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        return bootstrap
    }

    /// Starts (when not started), answers until graceful shutdown, cancellation or `shutdown()`,
    /// then shuts down. On graceful shutdown it first stops listening and sends every connection
    /// GOAWAY, answers what is open, and waits (at most `gracefulShutdownTimeout` plus the latency
    /// fault) for the clients to close their connections.
    public func run() async throws {
        try await start()
        let stop = self.stop
        let level = await stop.untilShutdown()
        if level == .graceful {
            await drain()
        }
        await shutdown()
    }

    /// How long a graceful shutdown waits for clients to close their connections.
    public static let gracefulShutdownTimeout: Duration = .seconds(10)

    private func drain() async {
        let listener = channel.withLockedValue { current -> Channel? in
            let listener = current
            current = nil
            return listener
        }
        if let listener { try? await listener.close() }
        if let management = managementChannel.withLockedValue({ current -> Channel? in defer { current = nil }; return current }) {
            try? await management.close()
        }
        let state = self.state
        let stop = self.stop
        let eventLoop = self.eventLoop
        let limit = TimeAmount(Self.gracefulShutdownTimeout + configuration.faults.latency)
        eventLoop.execute {
            state.value.drain(on: eventLoop).whenComplete { _ in stop.request(.immediate) }
            eventLoop.scheduleTask(in: limit) { stop.request(.immediate) }
        }
        _ = await withTaskCancellationHandler {
            await stop.wait(for: .immediate)
        } onCancel: {
            stop.request(.immediate)
        }
    }

    /// Stops listening, closes connections, flushes the log.
    public func shutdown() async {
        stop.request(.immediate)
        if final.withLockedValue({ $0 != nil }) { return }
        let listener = channel.withLockedValue { current -> Channel? in
            let listener = current
            current = nil
            return listener
        }
        if let listener { try? await listener.close() }
        if let management = managementChannel.withLockedValue({ current -> Channel? in defer { current = nil }; return current }) {
            try? await management.close()
        }
        let state = self.state
        let snapshot = try? await eventLoop.submit { () -> ([AcceptedNotification], SimulatorStats) in
            let value = state.value
            value.shutdown()
            return (value.accepted, value.stats)
        }.get()
        final.withLockedValue { final in
            if final == nil { final = (snapshot?.0 ?? [], snapshot?.1 ?? SimulatorStats()) }
        }
    }

    /// Runs `body` on the loop, or answers from the final snapshot once stopped.
    private func onLoop<T: Sendable>(
        _ body: @escaping @Sendable (SimulatorState) -> T,
        stopped: @Sendable ((accepted: [AcceptedNotification], stats: SimulatorStats)) -> T
    ) async -> T {
        let state = self.state
        let future = final.withLockedValue { final -> Result<EventLoopFuture<T>, Never>? in
            if final != nil { return nil }
            return .success(eventLoop.submit { body(state.value) })
        }
        if let snapshot = final.withLockedValue({ $0 }), future == nil {
            return stopped(snapshot)
        }
        if case .success(let future)? = future, let value = try? await future.get() {
            return value
        }
        return stopped(final.withLockedValue { $0 } ?? ([], SimulatorStats()))
    }

    /// Accepted notifications so far, in arrival order (when `recordAccepted`).
    public var accepted: [AcceptedNotification] {
        get async { await onLoop({ $0.accepted }, stopped: { $0.accepted }) }
    }

    public var stats: SimulatorStats {
        get async { await onLoop({ $0.stats }, stopped: { $0.stats }) }
    }

    /// Marks a device token unregistered from now on (410 with this timestamp).
    public func unregister(deviceToken: String, at date: Date) async {
        let token = deviceToken.lowercased()
        await onLoop({ $0.unregistered[token] = date }, stopped: { _ in () })
    }

    /// Trusts one more signing key for `teamID` (key rotation): its tokens are accepted for every
    /// token app of that team, beside the keys trusted already. Undoes `revokeKey` for that id.
    func trustKey(keyID: String, publicKey: P256.Signing.PublicKey, teamID: String) async {
        await onLoop({ $0.auth.trust(keyID: keyID, publicKey: publicKey, teamID: teamID) }, stopped: { _ in () })
    }

    /// Holds the answers to these device tokens (lowercase hex) until `releaseHeldAnswers()`:
    /// their streams stay open, so a connection carrying them is busy for as long as a test needs,
    /// however slowly the test is scheduled.
    public func holdAnswers(toDevices tokens: Set<String>) async {
        await onLoop({ $0.heldTokens.formUnion(tokens.map { $0.lowercased() }) }, stopped: { _ in () })
    }

    /// Answers the next `count` broadcasts that would be accepted with `status` (429, 500 or
    /// 503), as APNs under load does: a transient answer.
    public func failBroadcasts(_ count: Int, status: Int = 503) async {
        await onLoop({ state in
            state.channels.failingBroadcasts = count
            state.channels.broadcastFault = status
        }, stopped: { _ in () })
    }

    /// Answers every held stream now, and holds no more.
    public func releaseHeldAnswers() async {
        await onLoop({ $0.releaseHeld() }, stopped: { _ in () })
    }

    /// Revokes a signing key: its tokens are answered 403 InvalidProviderToken from now on, on
    /// connections that used it already too.
    func revokeKey(keyID: String) async {
        await onLoop({ _ = $0.auth.revokedKeys.insert(keyID) }, stopped: { _ in () })
    }

    /// Revokes a client certificate by serial number (lowercase hex, as `IssuedClientCertificate`
    /// gives it): its requests are answered 403 BadCertificate from now on, on connections that
    /// presented it already too. The handshake still succeeds, as Apple's does.
    func revokeCertificate(serialNumber: String) async {
        let serial = serialNumber.lowercased()
        await onLoop({ _ = $0.auth.revokedCertificates.insert(serial) }, stopped: { _ in () })
    }
}
