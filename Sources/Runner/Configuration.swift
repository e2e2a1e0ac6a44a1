import APNs
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HeraldCore
import Store

/// Herald's settings, read from the environment (README, "Configuration").
/// Secrets are never part of `description`.
public struct HeraldConfiguration: Sendable, CustomStringConvertible {
    public var database: DatabaseConfiguration
    /// Where the numbered migrations and the sample data are.
    public var sqlDirectory: URL
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    public var batchSize: Int
    public var concurrency: Int
    /// `HERALD_CONFIG_REFRESH_LEAD_MINUTES`: how long before a campaign its
    /// audience gets the config refresh push (default 60).
    public var configRefreshLeadMinutes: Int
    /// `HERALD_RECORD_EVERY`, `HERALD_RECORD_INTERVAL_MS`: outcomes written at
    /// least every N notifications and every T milliseconds.
    public var recordEvery: Int
    public var recordInterval: Duration
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
    /// The environment the APNs settings (`APNS_*`) are read from when a run sends.
    public var environment: [String: String]

    public static let defaultTopic = "com.example.herald"

    public init(environment env: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let url = env["DATABASE_URL"], !url.isEmpty else {
            throw StoreError.configuration("DATABASE_URL is not set; start a local database with scripts/pg start")
        }
        database = try DatabaseConfiguration(url: url, maxConnections: try Self.int(env, "HERALD_DB_CONNECTIONS", default: 8, range: 2...100))
        if let path = env["DATABASE_PASSWORD_FILE"], !path.isEmpty {
            guard database.password == nil else {
                throw StoreError.configuration("DATABASE_URL has a password and DATABASE_PASSWORD_FILE is set; give the password one way")
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw StoreError.configuration("DATABASE_PASSWORD_FILE: cannot read \(path)")
            }
            // The file's text without its final newline (as `echo secret > file` writes it).
            var text = String(decoding: data, as: UTF8.self)
            while text.hasSuffix("\n") || text.hasSuffix("\r") || text.hasSuffix("\r\n") { text.removeLast() }
            guard !text.isEmpty else { throw StoreError.configuration("DATABASE_PASSWORD_FILE: \(path) is empty") }
            database.password = text
        }
        sqlDirectory = try Self.findSQLDirectory(env["HERALD_SQL_DIR"])
        topic = env["APNS_TOPIC"].flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultTopic
        batchSize = try Self.int(env, "HERALD_BATCH_SIZE", default: 1000, range: 1...100_000)
        concurrency = try Self.int(env, "HERALD_CONCURRENCY", default: 200, range: 1...10_000)
        configRefreshLeadMinutes = try Self.int(env, "HERALD_CONFIG_REFRESH_LEAD_MINUTES", default: 60, range: 0...10_080)
        recordEvery = try Self.int(env, "HERALD_RECORD_EVERY", default: 100, range: 1...100_000)
        recordInterval = .milliseconds(try Self.int(env, "HERALD_RECORD_INTERVAL_MS", default: 250, range: 10...60_000))
        lease = .seconds(try Self.int(env, "HERALD_LEASE_SECONDS", default: 300, range: 5...86_400))
        outageBudget = .seconds(try Self.int(env, "HERALD_OUTAGE_BUDGET_SECONDS", default: 300, range: 0...86_400))
        databaseBudget = .seconds(try Self.int(env, "HERALD_DB_OUTAGE_SECONDS", default: 120, range: 1...86_400))
        stopGrace = .seconds(try Self.int(env, "HERALD_STOP_GRACE_SECONDS", default: 20, range: 0...3_600))
        retryWait = .seconds(try Self.int(env, "HERALD_RETRY_WAIT_SECONDS", default: 60, range: 0...3_600))
        metricsTextfile = try env["HERALD_METRICS_TEXTFILE"].flatMap { path -> String? in
            guard !path.isEmpty else { return nil }
            guard path.hasSuffix(".prom") else {
                throw StoreError.configuration("HERALD_METRICS_TEXTFILE must name a .prom file (node exporter reads only those), not \"\(path)\"")
            }
            return path
        }
        replySecret = try Self.replySecret(env)
        serve = try ServeSettings(environment: env)
        environment = env
    }

    /// `APNS_KEY_PATH`, `APNS_KEY_ID`, `APNS_TEAM_ID`, `APNS_TOPIC` and the
    /// optional `APNS_URL`, `APNS_CA_PATH`, … (README, "Configuration").
    public func apnsConfiguration() throws -> APNsConfiguration {
        var env = environment
        if env["APNS_TOPIC"] == nil { env["APNS_TOPIC"] = topic }
        return try APNsEnvironmentVariables.configuration(env)
    }

    static func replySecret(_ env: [String: String]) throws -> ReplySecret? {
        var text = env["HERALD_REPLY_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
        var source = "HERALD_REPLY_SECRET"
        if text == nil, let path = env["HERALD_REPLY_SECRET_FILE"], !path.isEmpty {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw StoreError.configuration("HERALD_REPLY_SECRET_FILE: cannot read \(path)")
            }
            text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            source = "HERALD_REPLY_SECRET_FILE (\(path))"
        }
        guard let text else { return nil }
        do {
            return try ReplySecret(base64: text)
        } catch {
            throw StoreError.configuration("\(source): \(error.description)")
        }
    }

    public var description: String {
        "database=\(database) sql=\(sqlDirectory.path) topic=\(topic) batch=\(batchSize) concurrency=\(concurrency) record-every=\(recordEvery) lease=\(lease)"
    }

    static func int(_ env: [String: String], _ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = env[name], !text.isEmpty else { return value }
        guard let n = Int(text), range.contains(n) else {
            throw StoreError.configuration("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \"\(text)\"")
        }
        return n
    }

    /// `HERALD_SQL_DIR`, else `Sql/` in the working directory or beside the
    /// executable's checkout (`.build/debug/herald` → `Sql/`), else
    /// `/usr/share/herald/Sql`.
    public static func findSQLDirectory(_ explicit: String?) throws -> URL {
        let fm = FileManager.default
        func hasMigrations(_ url: URL) -> Bool {
            fm.fileExists(atPath: url.appendingPathComponent("0001_init.sql").path)
        }
        if let explicit, !explicit.isEmpty {
            let url = URL(fileURLWithPath: explicit)
            guard hasMigrations(url) else {
                throw StoreError.configuration("HERALD_SQL_DIR=\(explicit) holds no 0001_init.sql")
            }
            return url
        }
        var candidates = [URL(fileURLWithPath: fm.currentDirectoryPath).appendingPathComponent("Sql")]
        var dir = URL(fileURLWithPath: CommandLine.arguments.first ?? ".").resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(dir.appendingPathComponent("Sql"))
            dir = dir.deletingLastPathComponent()
        }
        candidates.append(URL(fileURLWithPath: "/usr/share/herald/Sql"))
        if let found = candidates.first(where: hasMigrations) { return found }
        throw StoreError.configuration("cannot find the Sql directory; set HERALD_SQL_DIR")
    }
}

/// What `herald serve` is told (README, "Configuration" and "Security"). A
/// value left nil keeps the intake's own default (`IntakeLimits`); a value
/// given but not valid is refused, naming its variable.
public struct ServeSettings: Sendable, CustomStringConvertible {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Requests a second from one client address, and the burst allowed.
    public var ratePerAddress: Int?
    public var rateAddressBurst: Int?
    /// Replies a minute to one delivery; requests a minute about one device.
    public var ratePerDelivery: Int?
    public var ratePerDevice: Int?
    public var maxConnections: Int?
    public var maxConnectionsPerAddress: Int?
    public var headerTimeout: Duration?
    public var bodyTimeout: Duration?
    public var maxHeaderBytes: Int?
    /// Addresses of reverse proxies whose `X-Forwarded-For` is believed.
    public var trustedProxies: [String] = []
    /// The PEM public key that verifies the app backend's registration
    /// tokens, and where it came from (for messages). Not a secret, but
    /// not printed either.
    public var appJWTPublicKeyPEM: String?
    public var appJWTPublicKeySource: String?

    public init() {}

    public init(environment env: [String: String]) throws {
        typealias C = HeraldConfiguration
        if let host = env["HERALD_HTTP_HOST"], !host.isEmpty { self.host = host }
        port = try C.int(env, "HERALD_HTTP_PORT", default: 8080, range: 0...65_535)
        ratePerAddress = try C.optionalInt(env, "HERALD_RATE_ADDRESS", range: 1...1_000_000)
        rateAddressBurst = try C.optionalInt(env, "HERALD_RATE_ADDRESS_BURST", range: 1...1_000_000)
        ratePerDelivery = try C.optionalInt(env, "HERALD_RATE_DELIVERY", range: 1...1_000_000)
        ratePerDevice = try C.optionalInt(env, "HERALD_RATE_DEVICE", range: 1...1_000_000)
        maxConnections = try C.optionalInt(env, "HERALD_HTTP_MAX_CONNECTIONS", range: 1...1_000_000)
        maxConnectionsPerAddress = try C.optionalInt(env, "HERALD_HTTP_MAX_CONNECTIONS_PER_ADDRESS", range: 1...1_000_000)
        headerTimeout = try C.optionalInt(env, "HERALD_HTTP_HEADER_TIMEOUT", range: 1...3600).map { .seconds($0) }
        bodyTimeout = try C.optionalInt(env, "HERALD_HTTP_BODY_TIMEOUT", range: 1...3600).map { .seconds($0) }
        maxHeaderBytes = try C.optionalInt(env, "HERALD_HTTP_MAX_HEADER_BYTES", range: 1024...1_048_576)
        if let list = env["HERALD_TRUSTED_PROXIES"], !list.isEmpty {
            for item in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
                guard Self.isIPAddress(item) else {
                    throw StoreError.configuration(
                        "HERALD_TRUSTED_PROXIES must list IP addresses separated by commas; \"\(item)\" is not one")
                }
                trustedProxies.append(item)
            }
        }
        if let pem = env["HERALD_APP_JWT_PUBLIC_KEY"], !pem.isEmpty {
            // A PEM passed through an environment file often has its line breaks written as \n.
            appJWTPublicKeyPEM = pem.replacingOccurrences(of: "\\n", with: "\n")
            appJWTPublicKeySource = "HERALD_APP_JWT_PUBLIC_KEY"
        } else if let path = env["HERALD_APP_JWT_PUBLIC_KEY_FILE"], !path.isEmpty {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw StoreError.configuration("HERALD_APP_JWT_PUBLIC_KEY_FILE: cannot read \(path)")
            }
            appJWTPublicKeyPEM = String(decoding: data, as: UTF8.self)
            appJWTPublicKeySource = "HERALD_APP_JWT_PUBLIC_KEY_FILE (\(path))"
        }
    }

    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    public var description: String {
        "\(host):\(port) app-jwt-key=\(appJWTPublicKeySource ?? "none")"
    }
}

extension HeraldConfiguration {
    static func optionalInt(_ env: [String: String], _ name: String, range: ClosedRange<Int>) throws -> Int? {
        guard let text = env[name], !text.isEmpty else { return nil }
        return try int(env, name, default: range.lowerBound, range: range)
    }
}
