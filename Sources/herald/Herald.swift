import ArgumentParser
import Foundation
import Logging
import Observability
import Runner
import Store

@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Campaign push orchestrator: campaigns in PostgreSQL → APNs → replies back in PostgreSQL.",
        subcommands: [MigrateCommand.self, RunCommand.self, ServeCommand.self, IngestCommand.self, ReportCommand.self, KeysCommand.self, APNsSimCommand.self, DemoCommand.self])
}

/// Logs to standard error at LOG_LEVEL (default: info), as JSON lines or
/// text (HERALD_LOG_FORMAT: json, text, or auto = JSON unless standard error
/// is a terminal).
func makeLogger(_ label: String = "herald") -> Logger {
    LoggingSystem.bootstrapOnce()
    var logger = Logger(label: label)
    if let level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) {
        logger.logLevel = level
    } else {
        logger.logLevel = .info
    }
    return logger
}

extension LoggingSystem {
    private static let once: Void = {
        let format: LogFormat
        do {
            format = try LogFormat.from(environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("herald: \(error); writing text logs\n".utf8))
            format = .text
        }
        switch format {
        case .json: LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
        case .text: LoggingSystem.bootstrap(StreamLogHandler.standardError)
        }
    }()
    static func bootstrapOnce() { _ = once }
}

/// Turns any error into one readable line and exit code 1.
func readable(_ error: any Error) -> any Error {
    if error is ExitCode || error is CleanExit { return error }
    let text: String
    if let e = error as? StoreError { text = e.message }
    else { text = StoreError.describe(error) }
    FileHandle.standardError.write(Data("herald: \(text)\n".utf8))
    return ExitCode.failure
}

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply pending Sql/NNNN_*.sql migrations to DATABASE_URL.")

    func run() async throws {
        let logger = makeLogger()
        do {
            let config = try HeraldConfiguration()
            let applied = try await withPostgres(config.database, logger: logger) { client in
                try await Migrator(directory: config.sqlDirectory).migrate(client: client, logger: logger)
            }
            print(applied.isEmpty ? "migrate: up to date" : "migrate: applied \(applied.joined(separator: ", "))")
        } catch {
            throw readable(error)
        }
    }
}

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Send every due campaign (the cron job).")

    @Flag(help: "Snapshot audiences and print each device's payload as JSON lines instead of sending.")
    var dryRun = false

    @Option(help: "With --dry-run: write the JSON lines to this file instead of standard output.")
    var out: String?

    func run() async throws {
        let logger = makeLogger()
        do {
            let config = try HeraldConfiguration()
            let summary = try await withPostgres(config.database, logger: logger) { client in
                try await HeraldJob(configuration: config, logger: logger).run(client: client, dryRun: dryRun, out: out)
            }
            let report = summary.report
            if dryRun && out == nil {
                FileHandle.standardError.write(Data((report + "\n").utf8))
            } else {
                print(report)
            }
        } catch {
            throw readable(error)
        }
    }
}
