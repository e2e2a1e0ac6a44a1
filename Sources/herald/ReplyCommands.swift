import AppServer
import ArgumentParser
import Foundation
import HeraldCore
import Logging
import NIOCore
import Observability
import Reporting
import Runner
import ServiceLifecycle
import Settings
import Store

/// The reply tokens of the configured secrets (the current one, and the
/// previous one in its grace period): required wherever tokens are checked.
func requireReplyTokens(_ config: HeraldConfiguration) throws -> ReplyTokens {
    guard let tokens = config.replyTokens else {
        throw ConfigurationError(
            "HERALD_REPLY_SECRET (or HERALD_REPLY_SECRET_FILE, or reply.secret or reply.secret_file in the configuration file) is not set; make one with `herald keys reply-secret`",
            key: "HERALD_REPLY_SECRET")
    }
    return tokens
}

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve reply intake (POST /v1/replies), device registration (PUT/DELETE /v1/devices/{token}), GET /v1/notification-config, GET /healthz and GET /metrics (Prometheus; for the scraper, not to be forwarded by a public proxy).")

    @Option(help: "Address to listen on (default: HERALD_HTTP_HOST, else 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on (default: HERALD_HTTP_PORT, else 8080).")
    var port: Int?

    @OptionGroup var settings: ConfigFileOption

    func run() async throws {
        do {
            let config = try settings.load()
            let logger = makeLogger("herald", config)
            _ = try requireReplyTokens(config)
            let client = config.database.makeClient(logger: logger)
            let settings = config.serve
            let host = self.host ?? settings.host
            let port = self.port ?? settings.port
            let limits = AppServerLimits(settings)
            // The keys (the apps' registration keys are in the database) are
            // read before the listener starts, on a client of their own.
            let loaded = try await withPostgres(config.database, logger: logger) { first in
                try await serveKeys(config, apps: AppStore(client: first, logger: logger))
            }
            let replyKeys = ReplyKeys(loaded.0)
            let appKeys = AppKeys(loaded.1)
            if appKeys.apps.isEmpty {
                logger.notice("no app has a registration key (HERALD_APP_JWT_PUBLIC_KEY, apps.registration_keys): device registration answers 503")
            }
            let intake = ReplyIntake(store: ReplyStore(client: client, logger: logger), keys: replyKeys, logger: logger)
            let endpoints = AppEndpoints(client: client, keys: appKeys, logger: logger)
            let configFile = self.settings
            let reload = ServeReload(interval: .seconds(30), replyKeys: replyKeys, appKeys: appKeys, logger: logger) {
                try await serveKeys(try configFile.load(), apps: AppStore(client: client, logger: logger))
            }
            // Bootstraps swift-metrics before the first request is counted.
            let registry = ProcessMetrics.registry()
            let app = AppHTTPServer.application(
                intake: intake, app: endpoints, host: host, port: port, limits: limits, logger: logger,
                onRunning: { port in
                    logger.notice("reply intake listening", metadata: [
                        "address": "\(host):\(port)",
                        "per_address": "\(limits.perAddress)", "per_delivery": "\(limits.perDelivery)",
                        "max_connections": "\(limits.maxConnections)", "per_address_connections": "\(limits.maxConnectionsPerAddress)",
                        "header_timeout": "\(limits.headerTimeout)", "body_timeout": "\(limits.bodyTimeout)",
                        "trusted_proxies": "\(limits.trustedProxies.sorted().joined(separator: ","))",
                    ])
                },
                metrics: { registry.emitToString() })
            let group = ServiceGroup(configuration: .init(
                services: [.init(service: client), .init(service: app), .init(service: reload)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        } catch {
            throw readable(error)
        }
    }
}

extension AppServerLimits {
    /// The app server's limits (docs/operators.md, "Limits"): its defaults, with what the
    /// configuration sets.
    init(_ s: ServeSettings) {
        self.init()
        let perSecond = s.ratePerAddress ?? perAddress.count
        perAddress = .init(perSecond, per: .seconds(1), burst: s.rateAddressBurst ?? perAddress.burst)
        if let n = s.ratePerDelivery { perDelivery = .init(n, per: .seconds(60)) }
        if let n = s.ratePerDevice { perDevice = .init(n, per: .seconds(60)) }
        if let n = s.maxConnections { maxConnections = n }
        if let n = s.maxConnectionsPerAddress { maxConnectionsPerAddress = n }
        if let d = s.headerTimeout { headerTimeout = d }
        if let d = s.bodyTimeout { bodyTimeout = d }
        if let n = s.maxHeaderBytes { maxHeaderBytes = n }
        trustedProxies = Set(s.trustedProxies)
    }
}

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Check and store replies collected elsewhere: one contract-4 JSON object per line.",
        discussion: "Good lines are stored (a reply_id seen before is not stored twice, so a re-run is safe); each bad line is reported by number and reason, and the exit status is then 1.")

    @Argument(help: "The JSON-lines file.")
    var file: String

    @OptionGroup var settings: ConfigFileOption

    func run() async throws {
        let report: ReplyIntake.IngestReport
        do {
            let config = try settings.load()
            let logger = makeLogger("herald", config)
            let tokens = try requireReplyTokens(config)
            let path = file
            report = try await withPostgres(config.database, logger: logger) { client in
                try await ReplyIntake(store: ReplyStore(client: client, logger: logger), tokens: tokens, logger: logger)
                    .ingest(file: path)
            }
        } catch {
            throw readable(error)
        }
        try finishIngest("ingest", file: file, lines: report.lines, stored: report.stored, duplicates: report.duplicates,
                         bad: report.bad.map { ($0.line, $0.error.code, $0.error.message) })
    }
}

struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Print each campaign's funnel, replies by action and sample feedback from the analyst views, or write them as an HTML page.",
        discussion: "Reads the analyst views only, so a member of herald_analyst can run it. --html writes one self-contained page (inline charts, no network) with the delivery funnel, replies over time, the action breakdown and the searchable feedback texts.")

    @Argument(help: "Only this campaign (its id).")
    var campaign: Int64?

    @Option(name: .customLong("html"), help: "Write the report as an HTML page to this file.")
    var htmlPath: String?

    @OptionGroup var settings: ConfigFileOption

    func run() async throws {
        do {
            let config = try settings.load()
            let logger = makeLogger("herald", config)
            let campaign = self.campaign
            if let htmlPath {
                let data = try await withPostgres(config.database, logger: logger) { client in
                    try await AnalystReport(client: client, logger: logger).data(campaign: campaign)
                }
                if let campaign, data.campaigns.isEmpty {
                    throw ValidationError("no campaign \(campaign)")
                }
                let file = try LineFile(path: htmlPath)
                try await file.write(Array(ReportPage.html(data).utf8))
                try await file.finish()
                print("report: \(data.campaigns.count) campaign(s) written to \(htmlPath)")
            } else {
                let text = try await withPostgres(config.database, logger: logger) { client in
                    try await AnalystReport(client: client, logger: logger).render(campaign: campaign)
                }
                print(text)
            }
        } catch let error as ValidationError {
            throw error
        } catch {
            throw readable(error)
        }
    }
}

struct IngestConversionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest-conversions",
        abstract: "Store conversions collected elsewhere: one POST /v1/conversions body per line.",
        discussion: "Each line is {\"user\", \"event\", \"occurred_at\", \"amount\"?, \"currency\"?, \"idempotency_key\"}; good lines are stored (an idempotency key seen before is not stored twice, so a re-run is safe), each bad line is reported by number and reason, and the exit status is then 1.")

    @Argument(help: "The JSON-lines file.")
    var file: String

    @OptionGroup var settings: ConfigFileOption

    func run() async throws {
        let report: ConversionIngest.Report
        do {
            let config = try settings.load()
            let logger = makeLogger("herald", config)
            let path = file
            report = try await withPostgres(config.database, logger: logger) { client in
                try await ConversionIngest(store: ConversionStore(client: client, logger: logger)).ingest(file: path)
            }
        } catch {
            throw readable(error)
        }
        try finishIngest("ingest-conversions", file: file, lines: report.lines, stored: report.stored,
                         duplicates: report.duplicates, bad: report.bad)
    }
}

/// The end of an ingest command: each bad line to standard error as
/// `FILE:LINE: code: message`, the summary, and exit status 1 if any was bad.
func finishIngest(_ command: String, file: String, lines: Int, stored: Int, duplicates: Int,
                  bad: [(line: Int, code: String, message: String)]) throws {
    for entry in bad.sorted(by: { $0.line < $1.line }) {
        FileHandle.standardError.write(Data("\(file):\(entry.line): \(entry.code): \(entry.message)\n".utf8))
    }
    print("\(command): \(lines) lines, \(stored) stored, \(duplicates) already stored, \(bad.count) refused")
    if !bad.isEmpty { throw ExitCode.failure }
}
