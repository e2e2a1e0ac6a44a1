import ArgumentParser
import Foundation
import HeraldCore
import Logging
import NIOCore
import Observability
import ReplyIntake
import Runner
import ServiceLifecycle
import Store

/// The reply secret is required wherever tokens are made or checked.
func requireReplySecret(_ config: HeraldConfiguration) throws -> ReplySecret {
    guard let secret = config.replySecret else {
        throw StoreError.configuration(
            "HERALD_REPLY_SECRET (or HERALD_REPLY_SECRET_FILE) is not set; make one with `herald keys reply-secret`")
    }
    return secret
}

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve reply intake (POST /v1/replies), device registration (PUT/DELETE /v1/devices/{token}), GET /v1/notification-config, GET /healthz and GET /metrics (Prometheus; for the scraper, not to be forwarded by a public proxy).")

    @Option(help: "Address to listen on.")
    var host = ProcessInfo.processInfo.environment["HERALD_HTTP_HOST"] ?? "127.0.0.1"

    @Option(help: "Port to listen on.")
    var port = Int(ProcessInfo.processInfo.environment["HERALD_HTTP_PORT"] ?? "") ?? 8080

    func run() async throws {
        let logger = makeLogger()
        do {
            let config = try HeraldConfiguration()
            let tokens = ReplyTokens(secret: try requireReplySecret(config))
            let client = config.database.makeClient(logger: logger)
            let intake = ReplyIntake(store: ReplyStore(client: client, logger: logger), tokens: tokens, logger: logger)
            let limits = try intakeLimits()
            let verifier = try await AppTokenVerifier.fromEnvironment(config.environment)
            if verifier == nil { logger.notice("HERALD_APP_JWT_PUBLIC_KEY is not set: device registration answers 503") }
            let endpoints = AppEndpoints(client: client, verifier: verifier, logger: logger)
            // Bootstraps swift-metrics before the first request is counted.
            let registry = ProcessMetrics.registry()
            let app = IntakeServer.application(
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
                services: [.init(service: client), .init(service: app)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        } catch {
            throw readable(error)
        }
    }
}

/// The intake's limits (README, "Security"): defaults, overridden from the
/// environment. A bad value is refused naming its variable.
func intakeLimits(_ env: [String: String] = ProcessInfo.processInfo.environment) throws -> IntakeLimits {
    var limits = IntakeLimits()
    func int(_ name: String, _ value: Int, _ range: ClosedRange<Int>) throws -> Int {
        guard let text = env[name], !text.isEmpty else { return value }
        guard let n = Int(text), range.contains(n) else {
            throw StoreError.configuration("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \"\(text)\"")
        }
        return n
    }
    let perSecond = try int("HERALD_RATE_ADDRESS", limits.perAddress.count, 1...1_000_000)
    let burst = try int("HERALD_RATE_ADDRESS_BURST", limits.perAddress.burst, 1...1_000_000)
    limits.perAddress = .init(perSecond, per: .seconds(1), burst: burst)
    limits.perDelivery = .init(try int("HERALD_RATE_DELIVERY", limits.perDelivery.count, 1...1_000_000), per: .seconds(60))
    limits.perDevice = .init(try int("HERALD_RATE_DEVICE", limits.perDevice.count, 1...1_000_000), per: .seconds(60))
    limits.maxConnections = try int("HERALD_HTTP_MAX_CONNECTIONS", limits.maxConnections, 1...1_000_000)
    limits.maxConnectionsPerAddress = try int("HERALD_HTTP_MAX_CONNECTIONS_PER_ADDRESS", limits.maxConnectionsPerAddress, 1...1_000_000)
    limits.headerTimeout = .seconds(try int("HERALD_HTTP_HEADER_TIMEOUT", 10, 1...3600))
    limits.bodyTimeout = .seconds(try int("HERALD_HTTP_BODY_TIMEOUT", 30, 1...3600))
    limits.maxHeaderBytes = try int("HERALD_HTTP_MAX_HEADER_BYTES", limits.maxHeaderBytes, 1024...1_048_576)
    if let list = env["HERALD_TRUSTED_PROXIES"], !list.isEmpty {
        var proxies: Set<String> = []
        for item in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            guard (try? SocketAddress(ipAddress: item, port: 0)) != nil else {
                throw StoreError.configuration("HERALD_TRUSTED_PROXIES must list IP addresses separated by commas; \"\(item)\" is not one")
            }
            proxies.insert(item)
        }
        limits.trustedProxies = proxies
    }
    return limits
}

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Check and store replies collected elsewhere: one contract-4 JSON object per line.",
        discussion: "Good lines are stored (a reply_id seen before is not stored twice, so a re-run is safe); each bad line is reported by number and reason, and the exit status is then 1.")

    @Argument(help: "The JSON-lines file.")
    var file: String

    func run() async throws {
        let logger = makeLogger()
        let report: ReplyIntake.IngestReport
        do {
            let config = try HeraldConfiguration()
            let tokens = ReplyTokens(secret: try requireReplySecret(config))
            let path = file
            report = try await withPostgres(config.database, logger: logger) { client in
                try await ReplyIntake(store: ReplyStore(client: client, logger: logger), tokens: tokens, logger: logger)
                    .ingest(file: path)
            }
        } catch {
            throw readable(error)
        }
        for (line, error) in report.bad.sorted(by: { $0.line < $1.line }) {
            FileHandle.standardError.write(Data("\(file):\(line): \(error.code): \(error.message)\n".utf8))
        }
        print("ingest: \(report.lines) lines, \(report.stored) stored, \(report.duplicates) already stored, \(report.bad.count) refused")
        if !report.bad.isEmpty { throw ExitCode.failure }
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

    func run() async throws {
        let logger = makeLogger()
        do {
            let config = try HeraldConfiguration()
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
