/// Every setting Herald reads, in one place: its environment variable, its
/// key in a configuration file (`--config FILE` / `HERALD_CONFIG`), what it
/// holds, its default and what it means. `HeraldConfiguration` reads only
/// keys listed here, a configuration file may hold only keys listed here, and
/// docs/operators.md's "Configuration" table is `ConfigurationKey.markdownTable` (a test
/// compares them, so the two cannot drift apart).
public struct ConfigurationKey: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// Text (a name, a URL, a path); in a file, a TOML string.
        case text
        /// A whole number in a range, with its default (nil: unset means
        /// "the component's own default", given in `defaultText`); in a
        /// file, a TOML integer.
        case integer(ClosedRange<Int>, default: Int?)
        /// One of these words; in a file, a TOML string.
        case choice([String])
        /// Items separated by commas in the environment; in a file, an array of strings.
        case list
    }

    /// The environment variable: `HERALD_HTTP_PORT`.
    public let environment: String
    /// The table and key in a configuration file (`[serve]` `port`); nil
    /// for the one key a file cannot hold (`HERALD_CONFIG`, the file itself).
    public let section: String?
    public let name: String?
    public let kind: Kind
    /// Its value is a secret (or may hold one: a password in `DATABASE_URL`):
    /// never shown in a message, and a file holding it must not be readable
    /// by others.
    public let secret: Bool
    /// The default column, as Markdown.
    public let defaultText: String
    /// The meaning column, as Markdown.
    public let meaning: String

    init(_ environment: String, _ section: String?, _ name: String?, kind: Kind = .text, secret: Bool = false,
         default defaultText: String? = nil, _ meaning: String) {
        self.environment = environment
        self.section = section
        self.name = name
        self.kind = kind
        self.secret = secret
        if let defaultText {
            self.defaultText = defaultText
        } else if case .integer(_, let value?) = kind {
            self.defaultText = "\(value)"
        } else {
            self.defaultText = "none"
        }
        self.meaning = meaning
    }

    /// `serve.port`: the key as a file names it (also valid TOML as a dotted key).
    public var fileKey: String? {
        guard let section, let name else { return nil }
        return "\(section).\(name)"
    }

    public var description: String { environment }
}

extension ConfigurationKey {
    static let config = Self("HERALD_CONFIG", nil, nil,
        "the configuration file (TOML) when `--config` is not given; environment only")

    // Database.
    static let databaseURL = Self("DATABASE_URL", "database", "url", secret: true, default: "(required)",
        "`postgres://user:password@host:port/database`, or several servers as libpq writes them (`host1:port1,host2:port2`, see \"Failover\" in [Reliability](#reliability)); `?sslmode=disable|prefer|require` (default: `disable` on loopback, `prefer` elsewhere); `&target_session_attrs=any|read-write|primary` (default `any`). Treated as a secret: it may hold the password")
    static let databasePasswordFile = Self("DATABASE_PASSWORD_FILE", "database", "password_file",
        "a file holding the database password (a mounted secret), instead of a password in `DATABASE_URL`; a final newline is dropped")
    static let databaseConnections = Self("HERALD_DB_CONNECTIONS", "database", "connections", kind: .integer(2...100, default: 8),
        "PostgreSQL connections of one process")
    static let databaseOutage = Self("HERALD_DB_OUTAGE_SECONDS", "database", "outage_seconds", kind: .integer(1...86_400, default: 120),
        "how long one database call is retried through a restart, failover, deadlock or timeout before the run stops with 75")
    static let sqlDirectory = Self("HERALD_SQL_DIR", "database", "sql_dir",
        default: "the `Sql/` files embedded in the binary", "a folder of migrations and sample data to read instead of those embedded in the binary")

    // Reply tokens.
    static let replySecret = Self("HERALD_REPLY_SECRET", "reply", "secret", secret: true,
        default: "(required by `run`, `serve`, `ingest`)",
        "base64 of at least 32 random bytes (`herald keys reply-secret`); the key of the reply tokens")
    static let replySecretFile = Self("HERALD_REPLY_SECRET_FILE", "reply", "secret_file",
        "a file holding the reply secret, instead of `HERALD_REPLY_SECRET`")
    static let replySecretPrevious = Self("HERALD_REPLY_SECRET_PREVIOUS", "reply", "previous_secret", secret: true,
        "the reply secret before the current one, while it is replaced: tokens it made still verify until `HERALD_REPLY_SECRET_PREVIOUS_UNTIL` (docs/operators.md, \"Rotating keys\")")
    static let replySecretPreviousFile = Self("HERALD_REPLY_SECRET_PREVIOUS_FILE", "reply", "previous_secret_file",
        "a file holding the previous reply secret, instead of `HERALD_REPLY_SECRET_PREVIOUS`")
    static let replySecretPreviousUntil = Self("HERALD_REPLY_SECRET_PREVIOUS_UNTIL", "reply", "previous_until",
        default: "(required with a previous secret)",
        "the end of the grace period, in UTC (`2026-12-01T00:00:00Z`): replies and receipts under the previous secret are accepted until then; at most 30 days ahead")

    // APNs.
    static let apnsKeyPath = Self("APNS_KEY_PATH", "apns", "key_path", default: "(the app `default`'s key, unless its credential is in the database)",
        "the `.p8` token-signing key (PKCS#8 P-256 PEM); refused unless only its owner may read it (`chmod 600`)")
    static let apnsKeyID = Self("APNS_KEY_ID", "apns", "key_id", default: "(with `APNS_KEY_PATH`)",
        "the key's id (JWT `kid`)")
    static let apnsTeamID = Self("APNS_TEAM_ID", "apns", "team_id", default: "(with `APNS_KEY_PATH`)",
        "your team id (JWT `iss`)")
    static let apnsTopic = Self("APNS_TOPIC", "apns", "topic", default: "`com.example.herald`",
        "the app's bundle id, sent as `apns-topic`")
    static let apnsURL = Self("APNS_URL", "apns", "url", default: "Apple's servers",
        "an override such as `https://127.0.0.1:8443` (staging, the simulator)")
    static let apnsChannelsURL = Self("APNS_CHANNELS_URL", "apns", "channels_url", default: "Apple's servers",
        "where broadcast channels are managed, an override such as `https://127.0.0.1:8444` (the simulator)")
    static let apnsCAPath = Self("APNS_CA_PATH", "apns", "ca_path", "an extra trusted root (PEM) for the override")
    static let apnsMaxConnections = Self("APNS_MAX_CONNECTIONS", "apns", "max_connections", kind: .integer(1...1_000, default: nil),
        default: "4", "HTTP/2 connections per APNs host")
    static let apnsStreams = Self("APNS_STREAMS_PER_CONNECTION", "apns", "streams_per_connection",
        kind: .integer(1...100_000, default: nil), default: "100",
        "our cap on streams per connection (the server's SETTINGS cap also holds)")
    static let apnsTimeout = Self("APNS_TIMEOUT_SECONDS", "apns", "timeout_seconds", kind: .integer(1...3_600, default: nil),
        default: "30", "per-request deadline")
    static let apnsMaxAttempts = Self("APNS_MAX_ATTEMPTS", "apns", "max_attempts", kind: .integer(1...100, default: nil),
        default: "5", "attempts for 429/500/503/connection loss")

    // The batch run.
    static let batchSize = Self("HERALD_BATCH_SIZE", "run", "batch_size", kind: .integer(1...100_000, default: 1000),
        "deliveries claimed from the ledger at a time")
    static let concurrency = Self("HERALD_CONCURRENCY", "run", "concurrency", kind: .integer(1...10_000, default: 200),
        "notifications in flight at once (over every campaign the run sends at once)")
    static let campaignsAtOnce = Self("HERALD_CAMPAIGNS_AT_ONCE", "run", "campaigns_at_once", kind: .integer(1...64, default: 4),
        "due campaigns a run sends at once, time-sensitive ones first, then by send_at; 1: one after another")
    static let recordEvery = Self("HERALD_RECORD_EVERY", "run", "record_every", kind: .integer(1...100_000, default: 1000),
        "outcomes are written to the ledger at least every N notifications (the repeat window, see \"Reliability\")")
    static let snapshotSlice = Self("HERALD_SNAPSHOT_SLICE", "run", "snapshot_slice",
        kind: .integer(1...1_000_000_000, default: 50_000),
        "device ids in the first slice of a campaign's audience snapshot; sending starts once it is written, each next slice is three times as large as all before it")
    static let recordInterval = Self("HERALD_RECORD_INTERVAL_MS", "run", "record_interval_ms",
        kind: .integer(10...60_000, default: 250), "… and at least every this many milliseconds")
    static let lease = Self("HERALD_LEASE_SECONDS", "run", "lease_seconds", kind: .integer(5...86_400, default: 300),
        "how long a claimed delivery belongs to a run without renewal; at least one notification's longest time in the client (`APNS_MAX_ATTEMPTS` × (`APNS_TIMEOUT_SECONDS` + 5 s backoff) + 10 s connect) plus two renewals (a tenth of the lease each)")
    static let outageBudget = Self("HERALD_OUTAGE_BUDGET_SECONDS", "run", "outage_budget_seconds",
        kind: .integer(0...86_400, default: 300), "how long APNs may stay unreachable before the run stops with exit status 75")
    static let stopGrace = Self("HERALD_STOP_GRACE_SECONDS", "run", "stop_grace_seconds", kind: .integer(0...3_600, default: 20),
        "on SIGTERM/SIGINT, how long in-flight notifications may finish")
    static let retryWait = Self("HERALD_RETRY_WAIT_SECONDS", "run", "retry_wait_seconds", kind: .integer(0...3_600, default: 60),
        "retries whose backoff ends within this time are waited for by the same run")
    static let configRefreshLead = Self("HERALD_CONFIG_REFRESH_LEAD_MINUTES", "run", "config_refresh_lead_minutes",
        kind: .integer(0...10_080, default: 60),
        "how long before a campaign's `send_at` its devices that lack its category get the config refresh push")
    static let metricsTextfile = Self("HERALD_METRICS_TEXTFILE", "run", "metrics_textfile",
        "a `.prom` file where `herald run` writes its figures when it ends, in Prometheus's text format, for node exporter's textfile collector: `herald_run_notifications{outcome}`, `herald_run_campaign_notifications{campaign,outcome}`, `herald_run_duration_seconds`, `herald_run_rate_per_second`, `herald_run_exit_status`, `herald_run_finished_timestamp_seconds`; written whole (a temporary file renamed over it), never into a device or link")

    // `herald serve`.
    static let httpHost = Self("HERALD_HTTP_HOST", "serve", "host", default: "127.0.0.1", "where `herald serve` listens")
    static let httpPort = Self("HERALD_HTTP_PORT", "serve", "port", kind: .integer(0...65_535, default: 8080),
        "its port (`serve --host`/`--port` override both)")
    static let rateAddress = Self("HERALD_RATE_ADDRESS", "serve", "rate_address", kind: .integer(1...1_000_000, default: nil),
        default: "50", "requests a second from one client address (every endpoint together)")
    static let rateAddressBurst = Self("HERALD_RATE_ADDRESS_BURST", "serve", "rate_address_burst",
        kind: .integer(1...1_000_000, default: nil), default: "100", "the burst allowed above that rate")
    static let rateDelivery = Self("HERALD_RATE_DELIVERY", "serve", "rate_delivery", kind: .integer(1...1_000_000, default: nil),
        default: "10", "replies a minute to one delivery (after its token checked out)")
    static let rateDevice = Self("HERALD_RATE_DEVICE", "serve", "rate_device", kind: .integer(1...1_000_000, default: nil),
        default: "10", "requests a minute about one device (for the device registration routes)")
    static let httpMaxConnections = Self("HERALD_HTTP_MAX_CONNECTIONS", "serve", "max_connections",
        kind: .integer(1...1_000_000, default: nil), default: "1000",
        "connections open at once; more wait in the listen backlog")
    static let httpMaxConnectionsPerAddress = Self("HERALD_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "serve",
        "max_connections_per_address", kind: .integer(1...1_000_000, default: nil), default: "64",
        "connections open at once from one peer address (trusted proxies exempt); one more is closed at once")
    static let httpHeaderTimeout = Self("HERALD_HTTP_HEADER_TIMEOUT", "serve", "header_timeout_seconds",
        kind: .integer(1...3_600, default: nil), default: "10",
        "seconds a connection has to send a complete request head (after opening, or after its previous answer); a slower one is closed")
    static let httpBodyTimeout = Self("HERALD_HTTP_BODY_TIMEOUT", "serve", "body_timeout_seconds",
        kind: .integer(1...3_600, default: nil), default: "30", "seconds it then has to send the body")
    static let httpMaxHeaderBytes = Self("HERALD_HTTP_MAX_HEADER_BYTES", "serve", "max_header_bytes",
        kind: .integer(1024...1_048_576, default: nil), default: "16384",
        "the largest request head (request line and headers); more is answered 431")
    static let trustedProxies = Self("HERALD_TRUSTED_PROXIES", "serve", "trusted_proxies", kind: .list,
        "IP addresses of your reverse proxies / load balancers (comma-separated; in a file, an array of strings); only for them is `X-Forwarded-For` believed (its right-most entry that is not itself a trusted proxy)")
    static let appJWTPublicKey = Self("HERALD_APP_JWT_PUBLIC_KEY", "serve", "app_jwt_public_key",
        default: "none (device registration then answers 503)",
        "the PEM public key (P-256 for ES256, or Ed25519 for EdDSA) that verifies the registration tokens the app's backend issues")
    static let appJWTPublicKeyFile = Self("HERALD_APP_JWT_PUBLIC_KEY_FILE", "serve", "app_jwt_public_key_file",
        "a file holding that public key, instead of `HERALD_APP_JWT_PUBLIC_KEY`")

    // Logs.
    static let logLevel = Self("LOG_LEVEL", "log", "level",
        kind: .choice(["trace", "debug", "info", "notice", "warning", "error", "critical"]), default: "`info`",
        "`trace`, `debug`, `info`, `notice`, `warning`, `error`, `critical` (logs go to standard error)")
    static let logFormat = Self("HERALD_LOG_FORMAT", "log", "format", kind: .choice(["json", "text", "auto"]),
        default: "`auto`",
        "`json` (one JSON object a line: `ts`, `level`, `label`, `msg`, then the record's metadata such as `run`, `campaign`, `delivery`), `text`, or `auto`: text on a terminal, JSON otherwise")

    /// Every key, in the table's order.
    public static let all: [ConfigurationKey] = [
        config,
        databaseURL, databasePasswordFile, databaseConnections, databaseOutage, sqlDirectory,
        replySecret, replySecretFile, replySecretPrevious, replySecretPreviousFile, replySecretPreviousUntil,
        apnsKeyPath, apnsKeyID, apnsTeamID, apnsTopic, apnsURL, apnsChannelsURL, apnsCAPath,
        apnsMaxConnections, apnsStreams, apnsTimeout, apnsMaxAttempts,
        batchSize, concurrency, campaignsAtOnce, recordEvery, recordInterval, snapshotSlice, lease, outageBudget, stopGrace, retryWait,
        configRefreshLead, metricsTextfile,
        httpHost, httpPort, rateAddress, rateAddressBurst, rateDelivery, rateDevice,
        httpMaxConnections, httpMaxConnectionsPerAddress, httpHeaderTimeout, httpBodyTimeout, httpMaxHeaderBytes,
        trustedProxies, appJWTPublicKey, appJWTPublicKeyFile,
        logLevel, logFormat,
    ]

    /// Pairs that give one setting two ways (the value, or a file holding
    /// it). When the environment gives either, the file's are both ignored:
    /// the environment overrides the file as a whole setting.
    static let alternatives: [[ConfigurationKey]] = [
        [replySecret, replySecretFile],
        [replySecretPrevious, replySecretPreviousFile],
        [appJWTPublicKey, appJWTPublicKeyFile],
    ]

    /// The key a file names `section.name`, if any.
    static func inFile(section: String, name: String) -> ConfigurationKey? {
        all.first { $0.section == section && $0.name == name }
    }

    static var sections: [String] {
        var seen: [String] = []
        for key in all { if let s = key.section, !seen.contains(s) { seen.append(s) } }
        return seen
    }

    /// The table of every key (docs/operators.md, "Configuration", shows it verbatim).
    public static var markdownTable: String {
        func cell(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|") }
        var lines = ["| variable | in a file | default | meaning |", "|---|---|---|---|"]
        for key in all {
            let file = key.fileKey.map { "`\($0)`" } ?? "—"
            var meaning = key.meaning
            if case .integer(let range, _) = key.kind {
                meaning += "; a whole number from \(range.lowerBound) to \(range.upperBound)"
            }
            lines.append("| `\(key.environment)` | \(file) | \(cell(key.defaultText)) | \(cell(meaning)) |")
        }
        return lines.joined(separator: "\n")
    }
}
