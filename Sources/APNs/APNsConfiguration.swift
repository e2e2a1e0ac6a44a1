import Foundation

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
