import ArgumentParser
import Foundation
import HeraldCore
import Logging
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
        abstract: "Serve reply intake (POST /v1/replies), device registration (PUT/DELETE /v1/devices/{token}), GET /v1/notification-config and GET /healthz.")

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
            let verifier = try await AppTokenVerifier.fromEnvironment(config.environment)
            if verifier == nil { logger.notice("HERALD_APP_JWT_PUBLIC_KEY is not set: device registration answers 503") }
            let endpoints = AppEndpoints(client: client, verifier: verifier, logger: logger)
            let app = IntakeServer.application(intake: intake, app: endpoints, host: host, port: port, logger: logger) { port in
                logger.notice("reply intake listening", metadata: ["address": "\(host):\(port)"])
            }
            let group = ServiceGroup(configuration: .init(
                services: [.init(service: client), .init(service: app)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
            try await group.run()
        } catch {
            throw readable(error)
        }
    }
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
        commandName: "report", abstract: "Print each campaign's funnel, replies by action and sample feedback from the analyst views.")

    func run() async throws {
        let logger = makeLogger()
        do {
            let config = try HeraldConfiguration()
            let text = try await withPostgres(config.database, logger: logger) { client in
                try await AnalystReport(client: client, logger: logger).render()
            }
            print(text)
        } catch {
            throw readable(error)
        }
    }
}
