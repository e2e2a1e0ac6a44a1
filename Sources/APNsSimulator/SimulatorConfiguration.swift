import Crypto
import Foundation

/// How the simulator behaves: where it listens, what it trusts, what it refuses, what faults it injects.
public struct SimulatorConfiguration: Sendable {
    public enum TLS: Sendable {
        /// Generate a CA and a leaf for 127.0.0.1 / localhost / ::1, written as PEM files into the
        /// directory (`ca.pem`, `server.pem`, `server-key.pem`). Clients trust `ca.pem`.
        case generate(directory: String)
        /// Use existing PEM files.
        case files(certificateChainPath: String, privateKeyPath: String, caPath: String?)
    }

    public struct Faults: Sendable {
        /// Share of otherwise valid requests answered 429 TooManyRequests (0…1).
        public var rate429: Double
        /// Share answered 500 InternalServerError.
        public var rate500: Double
        /// Share answered 503 ServiceUnavailable.
        public var rate503: Double
        /// Seed of the generator that draws the faults, for reproducible runs.
        public var seed: UInt64
        /// Send GOAWAY on a connection after this many streams (streams above are not processed).
        public var goAwayAfterStreams: Int?
        /// Delay before each answer.
        public var latency: Duration
        /// Misbehave like some HTTP/2 servers: answer 200 as soon as the headers arrive, before
        /// reading the body, then reset the stream with NO_ERROR. Nothing is recorded as accepted.
        public var answerBeforeBody: Bool

        public init(
            rate429: Double = 0,
            rate500: Double = 0,
            rate503: Double = 0,
            seed: UInt64 = 42,
            goAwayAfterStreams: Int? = nil,
            latency: Duration = .zero,
            answerBeforeBody: Bool = false
        ) {
            self.rate429 = rate429
            self.rate500 = rate500
            self.rate503 = rate503
            self.seed = seed
            self.goAwayAfterStreams = goAwayAfterStreams
            self.latency = latency
            self.answerBeforeBody = answerBeforeBody
        }
    }

    public var host: String
    /// 0 picks a free port.
    public var port: Int
    public var tls: TLS
    /// The team id provider tokens must carry as `iss`.
    public var teamID: String
    /// Key id (`kid`) → the public key that verifies its tokens.
    public var signingKeys: [String: P256.Signing.PublicKey]
    /// Topics (bundle ids) that may be pushed to.
    public var allowedTopics: Set<String>
    /// More apps, each with its own topic and authentication (several teams, certificate apps).
    /// `teamID`, `signingKeys` and `allowedTopics` stay one token-authenticated team besides them;
    /// an app here takes precedence for its topic.
    public var apps: [SimulatedApp]
    /// Device tokens (lowercase hex) that are no longer registered, with the time they became invalid.
    public var unregisteredTokens: [String: Date]
    /// Device tokens (lowercase hex) that belong to another topic → 400 DeviceTokenNotForTopic.
    public var tokensOfOtherTopics: Set<String>
    public var faults: Faults
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised once a connection has sent a valid token.
    public var maxConcurrentStreams: Int
    /// Like APNs: advertise one stream until the first valid provider token, then raise it.
    public var startWithOneStream: Bool
    /// The port of the broadcast channel management API (APNs serves it apart, on 2195/2196);
    /// 0 picks a free one, nil serves none.
    public var channelsPort: Int? = 0
    /// Channels an app may have at once (APNs: 10,000); a create past it is refused
    /// `CannotCreateChannelConfig`.
    public var channelsPerApp = 10_000
    /// The random bytes of a channel id it makes (base64, so 16 bytes are 24 characters).
    /// Apple states no size, so tests make ids longer than any a client might assume.
    public var channelIDBytes = 16
    /// Append-only JSON lines of accepted notifications.
    public var acceptedLogPath: String?
    /// Append-only JSON lines of every attempt at a device, whatever its answer (its `status`):
    /// what a pace holds, refused attempts included.
    public var attemptsLogPath: String? = nil
    /// Client certificates refused from the start (serial numbers, lowercase hex), as Apple
    /// refuses a certificate revoked in the developer account.
    public var revokedCertificateSerials: Set<String> = []
    /// Keep accepted notifications in memory for `accepted` (tests); off for long runs.
    public var recordAccepted: Bool
    /// The simulator's clock, for `iat` checks.
    public var clock: @Sendable () -> Date

    public init(
        host: String = "127.0.0.1",
        port: Int = 0,
        tls: TLS,
        teamID: String,
        signingKeys: [String: P256.Signing.PublicKey],
        allowedTopics: Set<String>,
        unregisteredTokens: [String: Date] = [:],
        tokensOfOtherTopics: Set<String> = [],
        faults: Faults = Faults(),
        maxConcurrentStreams: Int = 1000,
        startWithOneStream: Bool = true,
        acceptedLogPath: String? = nil,
        recordAccepted: Bool = true,
        clock: @escaping @Sendable () -> Date = { Date() },
        apps: [SimulatedApp] = []
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.teamID = teamID
        self.signingKeys = signingKeys
        self.allowedTopics = allowedTopics
        self.unregisteredTokens = unregisteredTokens
        self.tokensOfOtherTopics = tokensOfOtherTopics
        self.faults = faults
        self.maxConcurrentStreams = maxConcurrentStreams
        self.startWithOneStream = startWithOneStream
        self.acceptedLogPath = acceptedLogPath
        self.recordAccepted = recordAccepted
        self.clock = clock
        self.apps = apps
    }
}
