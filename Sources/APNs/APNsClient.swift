import Foundation
import HeraldCore
import Lifecycle
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// Sends notifications to APNs over HTTP/2 + TLS, each with the credential it names (a provider
/// token or a TLS client certificate; see `APNsConfiguration.credentials`).
///
/// Connections are kept per endpoint and credential: a certificate credential has a TLS context
/// of its own (its certificate chain and key) and sends no `authorization` header; a token
/// credential has its own provider token, on the TLS context that token credentials share. All
/// connections together stay within `connectionBudget` (see `ConnectionBudget`).
///
/// A ServiceLifecycle `Service`: run it in the command's `ServiceGroup` (or `run()` it in a task
/// group). On graceful shutdown it takes no new notifications and lets those under way finish
/// (each until answered or past its deadline), then closes its connections; on cancellation, or
/// `shutdown()`, it fails what is under way with `.clientShutdown` at once. Its connections live
/// on one event loop of the group it is given, which it never shuts down.
/// `send(_:)` may be called from many tasks at once; how many notifications are in flight is
/// bounded by how many tasks the caller runs.
public final class APNsClient: Service, Sendable {
    private let configuration: APNsConfiguration
    private let logger: Logger
    private let eventLoop: EventLoop
    private let stop = StopSignal()
    private let pool: NIOLoopBoundBox<ConnectionPool>
    /// By index (the pools' `PoolKey.credential`), in name order.
    private let credentials: [ClientCredential]
    private let credentialIndex: [String: Int]
    private let defaultCredentialIndex: Int?
    private let overrideEndpoint: Endpoint?
    private let overrideAuthority: String?
    private let loopExecutor: EventLoopTaskExecutor
    private let submissions = NIOLockedValueBox(SubmissionQueue())
    private let requestTimeout: TimeAmount

    private struct SubmissionQueue {
        var pending: [OutboundRequest] = []
        var drainScheduled = false
        var isShutdown = false
    }

    public init(
        configuration: APNsConfiguration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger
    ) throws {
        var overrideEndpoint: Endpoint?
        if let url = configuration.baseURLOverride {
            guard let endpoint = Endpoint(url: url) else {
                throw APNsConfigurationError.invalidValue("baseURLOverride")
            }
            overrideEndpoint = endpoint
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        if let caPath = configuration.extraTrustedCAPath {
            guard let certificates = try? NIOSSLCertificate.fromPEMFile(caPath), !certificates.isEmpty else {
                throw APNsConfigurationError.caFileUnusable(path: caPath)
            }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        guard !configuration.credentials.isEmpty else { throw APNsConfigurationError.invalidValue("credentials") }
        if let name = configuration.defaultCredential, configuration.credentials[name] == nil {
            throw APNsConfigurationError.invalidValue("defaultCredential")
        }
        // Token credentials share one TLS context; each certificate credential has its own.
        let sharedContext = try NIOSSLContext(configuration: tls)
        var credentials: [ClientCredential] = []
        var sslContexts: [NIOSSLContext] = []
        for (name, credential) in configuration.credentials.sorted(by: { $0.key < $1.key }) {
            switch credential {
            case .token(let key, let keyID, let teamID):
                let store = ProviderTokenStore(key: key, keyID: keyID, teamID: teamID, clock: configuration.tokenClock)
                credentials.append(ClientCredential(name: name, kind: .token(store)))
                sslContexts.append(sharedContext)
            case .certificate(let certificate):
                var own = tls
                own.certificateChain = certificate.chain.map { .certificate($0) }
                own.privateKey = .privateKey(certificate.privateKey)
                guard let context = try? NIOSSLContext(configuration: own) else {
                    throw APNsConfigurationError.certificateUnusable(name: name)
                }
                credentials.append(ClientCredential(name: name, kind: .certificate(certificate)))
                sslContexts.append(context)
            }
        }
        let credentialIndex = Dictionary(uniqueKeysWithValues: credentials.enumerated().map { ($1.name, $0) })

        self.configuration = configuration
        self.logger = logger
        self.overrideEndpoint = overrideEndpoint
        self.overrideAuthority = overrideEndpoint?.authority
        self.requestTimeout = TimeAmount(configuration.requestTimeout)
        self.credentials = credentials
        self.credentialIndex = credentialIndex
        self.defaultCredentialIndex = configuration.defaultCredential.flatMap { credentialIndex[$0] }
        self.eventLoop = eventLoopGroup.next()
        self.loopExecutor = EventLoopTaskExecutor(eventLoop: eventLoop)
        self.pool = NIOLoopBoundBox.makeBoxSendingValue(
            ConnectionPool(
                eventLoop: eventLoop,
                sslContexts: sslContexts,
                credentialNames: credentials.map(\.name),
                presentsCertificate: credentials.map {
                    if case .certificate = $0.kind { return true } else { return false }
                },
                configuration: configuration,
                logger: logger
            ),
            eventLoop: eventLoop
        )
    }

    /// The client's event loop as a task executor. Tasks that send many notifications run
    /// cheapest with `withTaskExecutorPreference(client.taskExecutor) { … }`: the requests and
    /// their answers then stay on the one thread that owns the connections, with no thread
    /// hand-over per notification.
    @available(macOS 15.0, iOS 18.0, *)
    public var taskExecutor: any TaskExecutor { loopExecutor }

    /// Runs until graceful shutdown (then lets what is under way finish), cancellation or
    /// `shutdown()`, then closes every connection.
    public func run() async throws {
        let stop = self.stop
        let pool = self.pool
        let eventLoop = self.eventLoop
        let level = await stop.untilShutdown()
        if level == .graceful {
            logger.debug("apns client draining")
            eventLoop.execute {
                pool.value.drain().whenComplete { _ in stop.request(.immediate) }
            }
            _ = await withTaskCancellationHandler {
                await stop.wait(for: .immediate)
            } onCancel: {
                stop.request(.immediate)
            }
        }
        await shutdown()
    }

    /// Fails what is waiting or in flight with `.failed(nil, .clientShutdown)` and closes the
    /// connections. Safe to call more than once.
    public func shutdown() async {
        stop.request(.immediate)
        let first = submissions.withLockedValue { state -> Bool in
            defer { state.isShutdown = true }
            return !state.isShutdown
        }
        guard first else { return }
        let pool = self.pool
        let closed = eventLoop.flatSubmit { pool.value.shutdown() }
        try? await closed.get()
    }

    private var isShutdown: Bool { submissions.withLockedValue { $0.isShutdown } }

    /// Sends one notification, retrying as APNs asks. Never throws: every problem is an outcome.
    /// A request already written is always waited for (until its deadline), even when the calling
    /// task is cancelled; a cancelled task is not retried.
    public func send(_ notification: APNsNotification) async -> APNsResult {
        // The credential first: a refusal for it holds for every notification that names it.
        let named: Int? = if let name = notification.credential { self.credentialIndex[name] } else { defaultCredentialIndex }
        guard let credentialIndex = named else {
            return APNsResult(outcome: .failed(status: nil, reason: .unknownCredential), attempts: 0, retried: 0)
        }
        let credential = credentials[credentialIndex]
        let tokens: ProviderTokenStore?
        var topic = notification.topic ?? configuration.topic
        switch credential.kind {
        case .token(let store):
            tokens = store
        case .certificate(let certificate):
            tokens = nil
            if certificate.isExpired(at: Date()) {
                return APNsResult(outcome: .failed(status: nil, reason: .certificateExpired), attempts: 0, retried: 0)
            }
            // With no topic of its own, a notification goes to the certificate's app: the
            // configuration's topic when the certificate names it, else the certificate's first.
            if notification.topic == nil, let first = certificate.topics.first, !certificate.topics.contains(topic) {
                topic = first
            }
        }
        if let refusal = Self.localRefusal(notification) {
            return APNsResult(outcome: refusal, attempts: 0, retried: 0)
        }
        let endpoint = overrideEndpoint ?? Endpoint(host: notification.environment.host, port: 443)
        let authority = overrideAuthority ?? endpoint.authority
        let apnsID = UUIDText.lowercased(notification.apnsID)
        let body = ByteBuffer(bytes: notification.payload)
        let policy = configuration.retry

        var attempts = 0
        var retried = 0
        var unprocessed = 0
        var expiredTokenRetryUsed = false
        var lastFailure: (status: Int?, reason: APNsReason) = (nil, .connectionFailed)
        var random = SystemRandomNumberGenerator()

        while true {
            var token: ProviderTokenStore.Token?
            if let tokens {
                do {
                    token = try tokens.current()
                } catch {
                    logger.error("apns provider token could not be signed", metadata: ["apns.credential": "\(credential.name)"])
                    return APNsResult(outcome: .failed(status: nil, reason: .invalidProviderToken), attempts: attempts, retried: retried)
                }
            }
            let head = RequestHead.apns(
                APNsRequestHead(
                    authority: authority,
                    deviceToken: notification.deviceToken,
                    authorization: token?.headerValue,
                    topic: topic,
                    pushType: notification.pushType,
                    priority: notification.priority,
                    expiration: notification.expiration,
                    collapseID: notification.collapseID,
                    apnsID: apnsID,
                    contentLength: notification.payload.count
                )
            )
            let outcome = await attempt(head: head, body: body, endpoint: endpoint, credential: credentialIndex)

            switch outcome {
            case .notProcessed:
                unprocessed += 1
                retried += 1
                if unprocessed <= 3 * policy.maxAttempts + 10 { continue }
                // A server that never processes anything: count it as a failed attempt.
                unprocessed = 0
                attempts += 1
                lastFailure = (nil, .connectionFailed)
            case .shutdown:
                return APNsResult(outcome: .failed(status: nil, reason: .clientShutdown), attempts: attempts, retried: retried)
            case .timedOut:
                attempts += 1
                lastFailure = (nil, .timeout)
            case .connectionFailed:
                attempts += 1
                lastFailure = (nil, .connectionFailed)
            case .certificateRejected:
                // The server refused the TLS handshake for the certificate: no retry will do better.
                return APNsResult(outcome: .failed(status: nil, reason: .badCertificate), attempts: attempts + 1, retried: retried)
            case .response(let status, let responseBody):
                attempts += 1
                if status == 200 {
                    return APNsResult(outcome: .sent(apnsID: notification.apnsID), attempts: attempts, retried: retried)
                }
                let (reason, timestamp) = Self.parseError(status: status, body: responseBody)
                if status == 403, reason == .expiredProviderToken, !expiredTokenRetryUsed, let tokens, let token {
                    expiredTokenRetryUsed = true
                    _ = try? tokens.renewAfterExpired(generation: token.generation)
                    logger.info("apns provider token expired; renewed, retrying once")
                    retried += 1
                    continue
                }
                if status == 410 || reason.marksDeviceInvalid {
                    return APNsResult(
                        outcome: .deviceInvalid(reason: reason, timestamp: timestamp),
                        attempts: attempts,
                        retried: retried
                    )
                }
                // Only what is transient is tried again here (the run's DeliveryPolicy says which layer retries what).
                let verdict = APNsVerdict.of(status: status, reason: reason)
                guard case .transient = verdict else {
                    return APNsResult(outcome: .failed(status: status, reason: reason), attempts: attempts, retried: retried,
                                      verdict: verdict)
                }
                lastFailure = (status, reason)
            }

            // A retryable failure. A cancelled caller gets the failure instead of more attempts.
            guard attempts < min(policy.maxAttempts, notification.maxAttempts ?? policy.maxAttempts), !isShutdown, !Task.isCancelled else {
                return APNsResult(
                    outcome: .failed(status: lastFailure.status, reason: lastFailure.reason),
                    attempts: attempts,
                    retried: retried
                )
            }
            let delay = policy.delay(afterAttempt: attempts, using: &random)
            if delay > .zero {
                try? await Task.sleep(for: delay)
            }
            retried += 1
        }
    }

    /// Connections the budget counts now, the most at once so far, and how many were reclaimed
    /// for other pools, idle or busy (tests).
    func connectionBudgetUse() async -> (open: Int, peak: Int, closedIdle: Int, retired: Int) {
        let pool = self.pool
        let use = try? await eventLoop.submit {
            let pool = pool.value
            return (pool.openConnections, pool.peakConnections, pool.reclaimedConnections.closedIdle, pool.reclaimedConnections.retired)
        }.get()
        return use ?? (0, 0, 0, 0)
    }

    func rawEndpoint(_ environment: APNsEnvironment) -> Endpoint {
        overrideEndpoint ?? Endpoint(host: environment.host, port: 443)
    }

    /// The default credential's provider token (nil when it is a certificate).
    func rawToken() throws -> String? {
        guard let index = defaultCredentialIndex ?? credentials.indices.first,
            case .token(let tokens) = credentials[index].kind
        else { return nil }
        return try tokens.current().headerValue
    }

    func rawAttempt(headers: HPACKHeaders, body: ByteBuffer, endpoint: Endpoint) async -> AttemptOutcome {
        await attempt(head: .raw(headers), body: body, endpoint: endpoint, credential: defaultCredentialIndex ?? 0)
    }

    private func attempt(head: RequestHead, body: ByteBuffer, endpoint: Endpoint, credential: Int) async -> AttemptOutcome {
        await withCheckedContinuation { continuation in
            let request = OutboundRequest(
                head: head,
                body: body,
                endpoint: endpoint,
                credential: credential,
                deadline: .now() + requestTimeout,
                continuation: continuation
            )
            enqueue(request)
        }
    }

    /// Hands a request to the event loop; requests submitted while a hand-over is pending
    /// ride along with it (one wake-up of the loop per batch).
    private func enqueue(_ request: OutboundRequest) {
        if eventLoop.inEventLoop {
            // The caller runs on the client's executor: no hand-over needed.
            if isShutdown {
                request.complete(.shutdown)
            } else {
                pool.value.submit(request)
            }
            return
        }
        enum Action { case rejected, scheduleDrain, nothing }
        let action = submissions.withLockedValue { state -> Action in
            if state.isShutdown { return .rejected }
            state.pending.append(request)
            if state.drainScheduled { return .nothing }
            state.drainScheduled = true
            return .scheduleDrain
        }
        switch action {
        case .rejected:
            request.complete(.shutdown)
        case .nothing:
            break
        case .scheduleDrain:
            let pool = self.pool
            let submissions = self.submissions
            eventLoop.execute {
                let batch = submissions.withLockedValue { state -> [OutboundRequest] in
                    let batch = state.pending
                    state.pending = []
                    state.pending.reserveCapacity(batch.count)
                    state.drainScheduled = false
                    return batch
                }
                let pool = pool.value
                for request in batch { pool.submit(request) }
            }
        }
    }

    /// Problems found before sending, answered as APNs would.
    package static func localRefusal(_ notification: APNsNotification) -> APNsOutcome? {
        if notification.payload.count > APNsNotification.maximumPayloadSize {
            return .failed(status: nil, reason: .payloadTooLarge)
        }
        if notification.payload.isEmpty {
            return .failed(status: nil, reason: .payloadEmpty)
        }
        if notification.deviceToken.isEmpty {
            return .deviceInvalid(reason: .missingDeviceToken, timestamp: nil)
        }
        if !isHex(notification.deviceToken) {
            return .deviceInvalid(reason: .badDeviceToken, timestamp: nil)
        }
        if let collapseID = notification.collapseID, collapseID.utf8.count > APNsNotification.maximumCollapseIDSize {
            return .failed(status: nil, reason: .badCollapseID)
        }
        return nil
    }

    private struct ErrorBody: Decodable {
        var reason: String?
        var timestamp: Double?
    }

    /// Apple's error body: `{"reason": "...", "timestamp": <ms since epoch>}` (timestamp on 410).
    static func parseError(status: Int, body: ByteBuffer?) -> (APNsReason, Date?) {
        var reason: APNsReason?
        var timestamp: Date?
        if let body, body.readableBytes > 0,
            let decoded = try? JSONDecoder().decode(ErrorBody.self, from: Data(body.readableBytesView))
        {
            reason = decoded.reason.map(APNsReason.init(string:))
            timestamp = decoded.timestamp.map { Date(timeIntervalSince1970: $0 / 1000) }
        }
        if let reason { return (reason, timestamp) }
        switch status {
        case 410: return (.unregistered, timestamp)
        case 413: return (.payloadTooLarge, timestamp)
        case 429: return (.tooManyRequests, timestamp)
        case 500: return (.internalServerError, timestamp)
        case 503: return (.serviceUnavailable, timestamp)
        default: return (.unknown("HTTP \(status)"), timestamp)
        }
    }
}

private func isHex(_ text: String) -> Bool {
    var text = text
    return text.withUTF8 { bytes in
        for byte in bytes {
            let lower = byte | 0x20
            guard (0x30...0x39).contains(byte) || (0x61...0x66).contains(lower) else { return false }
        }
        return true
    }
}

@_spi(Testing)
extension APNsClient {
    /// Sends one raw request once (no retries, no local checks) and returns the status and
    /// Apple's reason; nil status when no HTTP answer came.
    public func sendRaw(_ raw: RawAPNsRequest, environment: APNsEnvironment = .production) async -> (
        status: Int?, reason: APNsReason?
    ) {
        let endpoint = rawEndpoint(environment)
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: raw.method)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: endpoint.authority)
        headers.add(name: ":path", value: raw.path)
        switch raw.authorization {
        case .current:
            if let token = try? rawToken() { headers.add(name: "authorization", value: token) }
        case .none:
            break
        case .custom(let value):
            headers.add(name: "authorization", value: value)
        }
        for (name, value) in raw.headers { headers.add(name: name, value: value) }
        let outcome = await rawAttempt(headers: headers, body: ByteBuffer(bytes: raw.body), endpoint: endpoint)
        switch outcome {
        case .response(let status, let body):
            if status == 200 { return (200, nil) }
            return (status, APNsClient.parseError(status: status, body: body).0)
        case .timedOut:
            return (nil, .timeout)
        case .shutdown:
            return (nil, .clientShutdown)
        case .connectionFailed, .notProcessed:
            return (nil, .connectionFailed)
        case .certificateRejected:
            return (nil, .badCertificate)
        }
    }
}
