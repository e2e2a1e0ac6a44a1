import APNs
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HeraldCore
import Logging
import Store

/// Herald's settings, read from the environment and an optional
/// configuration file (docs/operators.md, "Configuration"; the keys are
/// `ConfigurationKey.all`). Secrets are never part of `description`.
public struct HeraldConfiguration: Sendable, CustomStringConvertible {
    public var database: DatabaseConfiguration
    /// Where the numbered migrations and the sample data are.
    public var sqlFiles: SQLFiles
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    public var batchSize: Int
    public var concurrency: Int
    /// Due campaigns a run sends at once.
    public var campaignsAtOnce: Int
    /// `HERALD_CONFIG_REFRESH_LEAD_MINUTES`: how long before a campaign its
    /// audience gets the config refresh push (default 60).
    public var configRefreshLeadMinutes: Int
    /// `HERALD_RECORD_EVERY`, `HERALD_RECORD_INTERVAL_MS`: outcomes written at
    /// least every N notifications and every T milliseconds.
    public var recordEvery: Int
    public var recordInterval: Duration
    /// `HERALD_SNAPSHOT_SLICE`: device ids in a campaign's first audience slice.
    public var snapshotSlice: Int
    /// `HERALD_LEASE_SECONDS`: how long a claim belongs to a run without renewal.
    public var lease: Duration
    /// `HERALD_OUTAGE_BUDGET_SECONDS`: how long APNs may be unreachable before the run stops (75).
    public var outageBudget: Duration
    /// `HERALD_DB_OUTAGE_SECONDS`: how long the database may be unreachable before the run stops (75).
    public var databaseBudget: Duration
    /// `HERALD_STOP_GRACE_SECONDS`: how long a stopping run lets in-flight notifications finish.
    public var stopGrace: Duration
    /// `HERALD_RETRY_WAIT_SECONDS`: retries due within this time are waited for in the same run.
    public var retryWait: Duration
    /// `herald serve`'s settings (`HERALD_HTTP_*`, `HERALD_RATE_*`,
    /// `HERALD_TRUSTED_PROXIES`, `HERALD_APP_JWT_PUBLIC_KEY[_FILE]`).
    public var serve: ServeSettings
    /// `HERALD_METRICS_TEXTFILE`: where `herald run` writes its figures in
    /// Prometheus's text format (for node exporter's textfile collector).
    public var metricsTextfile: String?
    /// The key of the reply tokens (`HERALD_REPLY_SECRET`, base64, or a file
    /// holding it named by `HERALD_REPLY_SECRET_FILE`). Never printed.
    public var replySecret: ReplySecret?
    /// The reply secret being replaced, and until when tokens it made are
    /// accepted (`HERALD_REPLY_SECRET_PREVIOUS[_FILE]`, `…_PREVIOUS_UNTIL`).
    public var previousReplySecret: (secret: ReplySecret, until: Date)?
    /// `LOG_LEVEL` (nil: not set, `info`) and `HERALD_LOG_FORMAT` (`json`,
    /// `text`, `auto`; nil: not set, `auto`).
    public var logLevel: Logger.Level?
    public var logFormat: String?
    /// Where the settings came from; the APNs settings (`APNS_*`) are read
    /// from it when a command sends.
    public var source: ConfigurationSource
    /// The process environment alone; a setting is read through `source`
    /// (a `ConfigurationKey`), which also sees the configuration file.
    public var environment: [String: String] { source.environment }

    public static let defaultTopic = "com.example.herald"

    /// The environment over the file `configFile` names (else the one
    /// `HERALD_CONFIG` names, else none) over the defaults.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment, configFile: String? = nil) throws {
        try self.init(source: ConfigurationSource(environment: environment, configFile: configFile))
    }

    public init(source: ConfigurationSource) throws {
        self.source = source
        guard let url = source.text(.databaseURL) else {
            throw ConfigurationError("DATABASE_URL is not set; start a local database with scripts/pg start", key: .databaseURL)
        }
        let connections = try source.number(.databaseConnections)
        database = try url.within { try DatabaseConfiguration(url: url.text, maxConnections: connections) }
        if let file = source.text(.databasePasswordFile) {
            guard database.password == nil else {
                throw ConfigurationError(
                    "\(url.label) has a password and \(file.label) is set; give the password one way", key: .databasePasswordFile)
            }
            guard let data = FileManager.default.contents(atPath: file.text) else {
                throw ConfigurationError("\(file.label): cannot read \(file.text)", key: .databasePasswordFile)
            }
            // The file's text without its final newline (as `echo secret > file` writes it).
            var text = String(decoding: data, as: UTF8.self)
            while text.hasSuffix("\n") || text.hasSuffix("\r") || text.hasSuffix("\r\n") { text.removeLast() }
            guard !text.isEmpty else { throw ConfigurationError("\(file.label): \(file.text) is empty", key: .databasePasswordFile) }
            database.password = text
        }
        sqlFiles = try Self.sqlFiles(source.text(.sqlDirectory))
        topic = source.text(.apnsTopic)?.text ?? Self.defaultTopic
        batchSize = try source.number(.batchSize)
        concurrency = try source.number(.concurrency)
        campaignsAtOnce = try source.number(.campaignsAtOnce)
        configRefreshLeadMinutes = try source.number(.configRefreshLead)
        recordEvery = try source.number(.recordEvery)
        recordInterval = .milliseconds(try source.number(.recordInterval))
        snapshotSlice = try source.number(.snapshotSlice)
        lease = .seconds(try source.number(.lease))
        outageBudget = .seconds(try source.number(.outageBudget))
        databaseBudget = .seconds(try source.number(.databaseOutage))
        stopGrace = .seconds(try source.number(.stopGrace))
        retryWait = .seconds(try source.number(.retryWait))
        metricsTextfile = nil
        if let path = source.text(.metricsTextfile) {
            guard path.text.hasSuffix(".prom") else {
                throw path.invalid("must name a .prom file (node exporter reads only those)")
            }
            metricsTextfile = path.text
        }
        replySecret = try Self.replySecret(source, inline: .replySecret, file: .replySecretFile)
        previousReplySecret = try Self.previousReplySecret(source)
        serve = try ServeSettings(source: source)
        logLevel = try source.choice(.logLevel).flatMap(Logger.Level.init(rawValue:))
        logFormat = try source.choice(.logFormat)
    }

    /// `APNS_KEY_PATH`, `APNS_KEY_ID`, `APNS_TEAM_ID`, `APNS_TOPIC` and the
    /// optional `APNS_URL`, `APNS_CA_PATH`, … (docs/operators.md, "Configuration").
    public func apnsConfiguration() throws -> APNsConfiguration {
        try APNsEnvironmentVariables.configuration(source, defaultTopic: topic)
    }

    /// The reply tokens of the configured secrets (nil: no secret is set).
    public var replyTokens: ReplyTokens? {
        replySecret.map { ReplyTokens(secret: $0, previous: previousReplySecret?.secret, until: previousReplySecret?.until) }
    }

    static func previousReplySecret(_ source: ConfigurationSource) throws -> (secret: ReplySecret, until: Date)? {
        let until = source.text(.replySecretPreviousUntil)
        guard let secret = try replySecret(source, inline: .replySecretPrevious, file: .replySecretPreviousFile) else {
            if let until { throw until.invalid("is set without a previous secret (HERALD_REPLY_SECRET_PREVIOUS)") }
            return nil
        }
        guard let until else {
            throw ConfigurationError("HERALD_REPLY_SECRET_PREVIOUS is set without HERALD_REPLY_SECRET_PREVIOUS_UNTIL: say until when its tokens are accepted",
                                     key: .replySecretPreviousUntil)
        }
        let formatter = ISO8601DateFormatter()
        guard let date = formatter.date(from: until.text) else {
            throw until.invalid("must be a UTC time such as 2026-12-01T00:00:00Z")
        }
        guard date.timeIntervalSinceNow <= 30 * 86_400 else {
            throw until.invalid("is more than 30 days ahead: a secret being replaced should not outlive the notifications it signed")
        }
        return (secret, date)
    }

    static func replySecret(_ source: ConfigurationSource, inline inlineKey: ConfigurationKey,
                            file fileKey: ConfigurationKey) throws -> ReplySecret? {
        let text: String
        let setting: Setting
        if let inline = source.text(inlineKey) {
            setting = inline
            text = inline.text
        } else if let file = source.text(fileKey) {
            guard let data = FileManager.default.contents(atPath: file.text) else {
                throw ConfigurationError("\(file.label): cannot read \(file.text)")
            }
            setting = file
            text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            return nil
        }
        do {
            return try ReplySecret(base64: text)
        } catch {
            let source = setting.key == fileKey ? "\(setting.label) (\(setting.text))" : setting.label
            throw ConfigurationError("\(source): \(error.description)")
        }
    }

    public var description: String {
        "database=\(database) sql=\(sqlFiles) topic=\(topic) batch=\(batchSize) concurrency=\(concurrency) record-every=\(recordEvery) lease=\(lease)"
    }

    /// The folder `HERALD_SQL_DIR` names, else the files embedded in the binary.
    static func sqlFiles(_ explicit: Setting?) throws -> SQLFiles {
        guard let explicit, !explicit.text.isEmpty else { return .embedded }
        let url = URL(fileURLWithPath: explicit.text)
        // A folder of migrations: Sql/ (the baseline onwards), or Sql/history/.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        guard names.contains(where: { $0.hasSuffix(".sql") && $0.prefix(4).allSatisfy(\.isNumber) && $0.dropFirst(4).first == "_" }) else {
            throw ConfigurationError("\(explicit.label): \(explicit.text) holds no migration (NNNN_name.sql)")
        }
        return .directory(url)
    }
}
