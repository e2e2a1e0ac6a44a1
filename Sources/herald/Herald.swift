import ArgumentParser
import Foundation
import HeraldCore
import Lifecycle
import Logging
import NIOConcurrencyHelpers
import Observability
import Runner
import Settings
import Store

@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Campaign push orchestrator: campaigns in PostgreSQL → APNs → replies back in PostgreSQL.",
        version: HeraldVersion.text,
        subcommands: [MigrateCommand.self, RunCommand.self, ServeCommand.self, IngestCommand.self, IngestConversionsCommand.self, ReportCommand.self, KeysCommand.self, PreviewCommand.self, SendTestCommand.self, PruneCommand.self, ConfigCommand.self, AppsCommand.self, APNsSimCommand.self, DemoCommand.self, HealthcheckCommand.self])
}

/// Logs to standard error at LOG_LEVEL (default: info), as JSON lines or
/// text (HERALD_LOG_FORMAT: json, text, or auto = JSON unless standard error
/// is a terminal), as `configuration` says (the environment over the
/// configuration file); without one (commands that read no configuration),
/// as the environment says.
func makeLogger(_ label: String = "herald", _ configuration: HeraldConfiguration? = nil) -> Logger {
    let environment = ProcessInfo.processInfo.environment
    let format: LogFormat
    if let configuration {
        format = configuration.logFormat.flatMap { LogFormat(rawValue: $0) } ?? .automatic()
    } else {
        do {
            format = try LogFormat.from(environment: environment)
        } catch {
            FileHandle.standardError.write(Data("herald: \(error); writing text logs\n".utf8))
            format = .text
        }
    }
    LoggingSystem.bootstrapOnce(format)
    var logger = Logger(label: label)
    if let configuration {
        logger.logLevel = configuration.logLevel ?? .info
    } else {
        logger.logLevel = environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    }
    return logger
}

extension LoggingSystem {
    private static let bootstrapped = NIOLockedValueBox(false)

    /// The first call bootstraps the logging system; later calls keep it.
    static func bootstrapOnce(_ format: LogFormat) {
        let first = bootstrapped.withLockedValue { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        switch format {
        case .json: LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
        case .text: LoggingSystem.bootstrap(StreamLogHandler.standardError)
        }
    }
}

/// `--config FILE`: a TOML file of settings, for every command that reads
/// Herald's configuration (docs/operators.md, "Configuration").
struct ConfigFileOption: ParsableArguments {
    @Option(name: .customLong("config"),
            help: ArgumentHelp("A TOML file of settings (docs/operators.md, \"Configuration\"); environment variables override it. Default: the file HERALD_CONFIG names, if any.",
                               valueName: "file"))
    var path: String?

    /// The configuration: the environment over the file over the defaults.
    func load() throws -> HeraldConfiguration {
        try HeraldConfiguration(environment: ProcessInfo.processInfo.environment, configFile: path)
    }
}

/// Turns any error into one readable line and exit code 1.
func readable(_ error: any Error) -> any Error {
    if error is ExitCode || error is CleanExit { return error }
    FileHandle.standardError.write(Data("herald: \(ErrorText.describe(error))\n".utf8))
    return ExitCode.failure
}

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply pending Sql/NNNN_*.sql migrations to DATABASE_URL.")

    @OptionGroup var settings: ConfigFileOption

    func run() async throws {
        do {
            let config = try settings.load()
            let logger = makeLogger("herald", config)
            let applied = try await withPostgres(config.database, logger: logger) { client in
                try await Migrator(files: config.sqlFiles).migrate(client: client, logger: logger)
            }
            print(applied.isEmpty ? "migrate: up to date" : "migrate: applied \(applied.joined(separator: ", "))")
        } catch {
            throw readable(error)
        }
    }
}

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Send every due campaign (the cron job).",
        discussion: """
            Exit status: 0 everything due was done (or nothing was due); 75 stopped early by an \
            outage of APNs or the database, or by SIGTERM/SIGINT, with work left that the next run \
            continues; 1 a person is needed (APNs refused the provider: wrong key, team or topic; a \
            bad setting). SIGTERM or SIGINT stops claiming, lets what is in flight finish within \
            HERALD_STOP_GRACE_SECONDS, records every outcome and gives back what was not sent; a \
            second signal exits at once.
            """)

    @Flag(help: "Snapshot audiences and print each device's payload as JSON lines instead of sending.")
    var dryRun = false

    @Option(help: "With --dry-run: write the JSON lines to this file instead of standard output.")
    var out: String?

    @OptionGroup var settings: ConfigFileOption

    func run() async throws {
        let config: HeraldConfiguration
        do {
            config = try settings.load()
        } catch {
            throw readable(error)
        }
        let logger = makeLogger("herald", config)
        let summary: RunSummary
        do {
            let stop = StopSignal()
            let (dryRun, out) = (dryRun, out)
            summary = try await JobLifecycle.run(database: config.database, stop: stop, logger: logger) { client in
                try await HeraldJob(configuration: config, logger: logger).run(client: client, dryRun: dryRun, out: out, stop: stop)
            }
        } catch let outage as DatabaseUnavailable {
            FileHandle.standardError.write(Data("herald: \(outage.description); the next run continues\n".utf8))
            throw ExitCode(JobLifecycle.tempFail)
        } catch {
            throw readable(error)
        }
        let report = summary.report
        if dryRun && out == nil {
            FileHandle.standardError.write(Data((report + "\n").utf8))
        } else {
            print(report)
        }
        if let path = config.metricsTextfile {
            do {
                try PrometheusTextfile.write(summary.prometheusText(exitStatus: summary.exitStatus), to: path)
            } catch {
                logger.error("could not write the run's metrics", metadata: ["error": "\(error)"])
            }
        }
        if summary.exitStatus != 0 { throw ExitCode(summary.exitStatus) }
    }
}
