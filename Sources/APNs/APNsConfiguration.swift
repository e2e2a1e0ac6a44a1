import Foundation

/// How failed attempts are retried: exponential backoff with full jitter.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first one included.
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration

    public init(maxAttempts: Int = 5, baseDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(5)) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The delay before attempt number `attempt + 1`, after `attempt` failed attempts (1-based):
    /// uniformly random in `0 ... min(maxDelay, baseDelay * 2^(attempt-1))`.
    func delay<G: RandomNumberGenerator>(afterAttempt attempt: Int, using generator: inout G) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(self.maxDelay, self.baseDelay * (1 << exponent))
        let ceilingNanos = ceiling.components.seconds * 1_000_000_000 + ceiling.components.attoseconds / 1_000_000_000
        guard ceilingNanos > 0 else { return .zero }
        return .nanoseconds(Int64.random(in: 0...ceilingNanos, using: &generator))
    }
}

/// Everything the APNs client needs. `description` never shows key material.
///
/// One client serves several apps: `credentials` names each credential (token or certificate;
/// the names are the caller's, e.g. "shop/production/2026-key"), a notification picks one by name
/// and `defaultCredential` serves those that name none.
public struct APNsConfiguration: Sendable, CustomStringConvertible {
    /// Name → credential.
    public var credentials: [String: APNsCredential]
    /// The credential of notifications that name none (nil: they must name one).
    public var defaultCredential: String?
    /// Default `apns-topic` (the app's bundle id).
    public var topic: String
    /// e.g. `https://127.0.0.1:8443`; nil sends to Apple's hosts per device environment.
    public var baseURLOverride: String?
    /// A PEM file of extra trusted roots (a simulator's or a staging CA), on top of the system roots.
    public var extraTrustedCAPath: String?
    /// e.g. `https://127.0.0.1:8444`; nil manages broadcast channels on Apple's hosts
    /// (`api-manage-broadcast[.sandbox].push.apple.com`, ports 2196 and 2195).
    public var channelsBaseURLOverride: String?
    /// Connections per host and credential.
    public var maxConnections: Int
    /// Connections of the whole client, over every host and credential (see `ConnectionBudget`).
    public var connectionBudget: Int
    /// Streams in flight per connection; the server's SETTINGS_MAX_CONCURRENT_STREAMS bounds it too.
    public var maxStreamsPerConnection: Int
    /// Deadline of one request (one attempt), from submission to answer.
    public var requestTimeout: Duration
    public var retry: RetryPolicy
    /// Connect timeout of one connection attempt (TCP + TLS).
    public var connectTimeout: Duration
    /// A PING is sent on a connection that read nothing for this long.
    public var pingInterval: Duration
    /// The wall clock that stamps `iat` on provider tokens. Tests inject one to make stale tokens.
    public var tokenClock: @Sendable () -> Date

    /// One token credential, named "default" and used by every notification that names none.
    public init(
        signingKey: APNsSigningKey,
        keyID: String,
        teamID: String,
        topic: String,
        baseURLOverride: String? = nil,
        extraTrustedCAPath: String? = nil,
        maxConnections: Int = 4,
        maxStreamsPerConnection: Int = 100,
        requestTimeout: Duration = .seconds(30),
        retry: RetryPolicy = RetryPolicy(),
        connectTimeout: Duration = .seconds(10),
        pingInterval: Duration = .seconds(60),
        tokenClock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(
            credentials: ["default": .token(signingKey: signingKey, keyID: keyID, teamID: teamID)],
            defaultCredential: "default",
            topic: topic,
            baseURLOverride: baseURLOverride,
            extraTrustedCAPath: extraTrustedCAPath,
            maxConnections: maxConnections,
            maxStreamsPerConnection: maxStreamsPerConnection,
            requestTimeout: requestTimeout,
            retry: retry,
            connectTimeout: connectTimeout,
            pingInterval: pingInterval,
            tokenClock: tokenClock
        )
    }

    /// Several named credentials; `defaultCredential` (one of the names, or nil) serves the
    /// notifications that name none.
    public init(
        credentials: [String: APNsCredential],
        defaultCredential: String?,
        topic: String,
        baseURLOverride: String? = nil,
        extraTrustedCAPath: String? = nil,
        maxConnections: Int = 4,
        connectionBudget: Int = 16,
        maxStreamsPerConnection: Int = 100,
        requestTimeout: Duration = .seconds(30),
        retry: RetryPolicy = RetryPolicy(),
        connectTimeout: Duration = .seconds(10),
        pingInterval: Duration = .seconds(60),
        tokenClock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.credentials = credentials
        self.defaultCredential = defaultCredential
        self.topic = topic
        self.baseURLOverride = baseURLOverride
        self.extraTrustedCAPath = extraTrustedCAPath
        self.maxConnections = maxConnections
        self.connectionBudget = connectionBudget
        self.maxStreamsPerConnection = maxStreamsPerConnection
        self.requestTimeout = requestTimeout
        self.retry = retry
        self.connectTimeout = connectTimeout
        self.pingInterval = pingInterval
        self.tokenClock = tokenClock
    }

    /// The default credential's signing key, when it is a token credential (nil otherwise).
    /// Setting it replaces that key; it does nothing when the default credential is no token.
    public var signingKey: APNsSigningKey? {
        get { defaultToken?.signingKey }
        set { if let newValue { updateDefaultToken { $0.signingKey = newValue } } }
    }

    /// The default credential's key id, when it is a token credential.
    public var keyID: String? {
        get { defaultToken?.keyID }
        set { if let newValue { updateDefaultToken { $0.keyID = newValue } } }
    }

    /// The default credential's team id, when it is a token credential.
    public var teamID: String? {
        get { defaultToken?.teamID }
        set { if let newValue { updateDefaultToken { $0.teamID = newValue } } }
    }

    private struct TokenParts {
        var signingKey: APNsSigningKey
        var keyID: String
        var teamID: String
    }

    private var defaultToken: TokenParts? {
        guard let name = defaultCredential, case .token(let key, let keyID, let teamID)? = credentials[name] else {
            return nil
        }
        return TokenParts(signingKey: key, keyID: keyID, teamID: teamID)
    }

    private mutating func updateDefaultToken(_ change: (inout TokenParts) -> Void) {
        guard let name = defaultCredential, var parts = defaultToken else { return }
        change(&parts)
        credentials[name] = .token(signingKey: parts.signingKey, keyID: parts.keyID, teamID: parts.teamID)
    }

    public var description: String {
        let shown = credentials.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        return "APNsConfiguration(credentials: [\(shown)], defaultCredential: \(defaultCredential ?? "none"), "
            + "topic: \(topic), url: \(baseURLOverride ?? "apple"), extraCA: \(extraTrustedCAPath ?? "none"), "
            + "maxConnections: \(maxConnections), connectionBudget: \(connectionBudget), "
            + "maxStreamsPerConnection: \(maxStreamsPerConnection), "
            + "requestTimeout: \(requestTimeout), maxAttempts: \(retry.maxAttempts))"
    }

    /// True for a `baseURLOverride` the client takes: `https://host[:port]`.
    public static func isValidBaseURL(_ url: String) -> Bool {
        Endpoint(url: url) != nil
    }
}

/// A host and port to connect to.
struct Endpoint: Hashable, Sendable {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `https://host[:port]` (a trailing slash is allowed; IPv6 in brackets).
    init?(url: String) {
        var rest = Substring(url)
        if rest.hasPrefix("https://") { rest = rest.dropFirst("https://".count) } else { return nil }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/") else { return nil }
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            self.host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if after.isEmpty {
                self.port = 443
            } else if after.hasPrefix(":"), let port = Int(after.dropFirst()), (1...65535).contains(port) {
                self.port = port
            } else {
                return nil
            }
        } else if let colon = rest.lastIndex(of: ":") {
            guard let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port) else { return nil }
            self.host = String(rest[..<colon])
            self.port = port
        } else {
            self.host = String(rest)
            self.port = 443
        }
        guard !host.isEmpty else { return nil }
    }

    /// The `:authority` pseudo-header value.
    var authority: String {
        let shownHost = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return port == 443 ? shownHost : "\(shownHost):\(port)"
    }

    /// True for IPv4/IPv6 literals, which cannot go into SNI.
    var isIPAddress: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// A configuration or key problem. The description names the setting or path, never key material.
public struct APNsConfigurationError: Error, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case invalidValue(String)
        case keyFileUnreadable(path: String)
        case keyFileTooOpen(path: String, mode: Int)
        case keyInvalid(path: String?)
        case caFileUnusable(path: String)
        case credentialFileTooOpen(path: String, mode: Int)
        case credentialFileUnreadable(path: String)
        case p12Unusable(path: String, withPassword: Bool)
        case certificateInvalid(path: String)
        case certificateKeyInvalid(path: String)
        case certificateUnusable(name: String)
        case tokenRequired(String)
    }
    private let code: Code

    static func invalidValue(_ name: String) -> Self { Self(code: .invalidValue(name)) }
    static func keyFileUnreadable(path: String) -> Self { Self(code: .keyFileUnreadable(path: path)) }
    static func keyFileTooOpen(path: String, mode: Int) -> Self { Self(code: .keyFileTooOpen(path: path, mode: mode)) }
    static func keyInvalid(path: String?) -> Self { Self(code: .keyInvalid(path: path)) }
    static func caFileUnusable(path: String) -> Self { Self(code: .caFileUnusable(path: path)) }
    static func credentialFileTooOpen(path: String, mode: Int) -> Self { Self(code: .credentialFileTooOpen(path: path, mode: mode)) }
    static func credentialFileUnreadable(path: String) -> Self { Self(code: .credentialFileUnreadable(path: path)) }
    static func p12Unusable(path: String, withPassword: Bool) -> Self {
        Self(code: .p12Unusable(path: path, withPassword: withPassword))
    }
    static func certificateInvalid(path: String) -> Self { Self(code: .certificateInvalid(path: path)) }
    static func certificateKeyInvalid(path: String) -> Self { Self(code: .certificateKeyInvalid(path: path)) }
    static func certificateUnusable(name: String) -> Self { Self(code: .certificateUnusable(name: name)) }
    /// A push type Apple takes with provider tokens only (`what` names it).
    static func tokenRequired(_ what: String) -> Self { Self(code: .tokenRequired(what)) }

    public var description: String {
        switch code {
        case .invalidValue(let name): return "APNs configuration: \(name) has an invalid value"
        case .keyFileUnreadable(let path): return "APNs signing key: cannot read \(path)"
        case .keyFileTooOpen(let path, let mode):
            return "APNs signing key: \(path) may be read by other users (mode 0\(String(mode, radix: 8))); it signs for your whole team: chmod 600 \(path)"
        case .keyInvalid(let path?):
            return "APNs signing key: \(path) is not a PKCS#8 P-256 private key in PEM (.p8)"
        case .keyInvalid(nil): return "APNs signing key: not a PKCS#8 P-256 private key in PEM (.p8)"
        case .caFileUnusable(let path): return "APNs trusted CA: cannot use \(path) as PEM certificates"
        case .credentialFileTooOpen(let path, let mode):
            return "APNs credential: \(path) may be read by other users (mode 0\(String(mode, radix: 8))); "
                + "whoever reads it can push as your app: chmod 600 \(path)"
        case .credentialFileUnreadable(let path): return "APNs credential: cannot read \(path)"
        case .p12Unusable(let path, true):
            return "APNs client certificate: cannot open \(path) as PKCS#12 with the password of its password file (wrong password, or not a .p12)"
        case .p12Unusable(let path, false):
            return "APNs client certificate: cannot open \(path) as PKCS#12 without a password (does it need a password file?)"
        case .certificateInvalid(let path): return "APNs client certificate: \(path) holds no usable X.509 certificate"
        case .certificateKeyInvalid(let path): return "APNs client certificate: \(path) is not a private key in PEM"
        case .certificateUnusable(let name):
            return "APNs credential \(name): the certificate and its private key cannot be used for TLS (do they belong together?)"
        case .tokenRequired(let what):
            return "APNs credential: \(what)"
        }
    }

    /// True for problems with a credential: the signing key, a client certificate or their files.
    var isKeyProblem: Bool {
        switch code {
        case .keyFileUnreadable, .keyFileTooOpen, .keyInvalid, .credentialFileTooOpen, .credentialFileUnreadable,
            .p12Unusable, .certificateInvalid, .certificateKeyInvalid, .certificateUnusable:
            return true
        default: return false
        }
    }
}
