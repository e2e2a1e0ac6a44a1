import Settings
import ArgumentParser
import Foundation
import Runner
import Store

/// `herald config`: what the settings are, and which keys there are.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check the settings (environment and configuration file), or list every key.",
        subcommands: [Check.self, Keys.self])

    /// `herald config check [--config FILE]`
    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Read the settings as the other commands do; print each one's value and where it came from.",
            discussion: """
                Secrets are shown as "(set; hidden)". The APNs settings are checked too (the key \
                file read) when any of APNS_KEY_PATH, APNS_KEY_ID, APNS_TEAM_ID is given. Exit status: \
                0 every setting is valid; 1 otherwise, with a message naming the first invalid one. \
                Connects to nothing, unless --apps: then the apps and their APNs credentials are read \
                from the database and each credential's files checked (a certificate's expiry shown, \
                with a warning 30 days ahead; exit status 1 when one is unusable or expired).
                """)

        @OptionGroup var settings: ConfigFileOption

        @Flag(help: "Also read the apps and their APNs credentials from the database and check each one's files.")
        var apps = false

        func run() async throws {
            var unusable = false
            do {
                let config = try settings.load()
                if config.source.namesAPNs { _ = try config.apnsConfiguration() }
                if let file = config.source.file { print("configuration file: \(file.path)") }
                for line in config.source.lines() { print(line) }
                if apps {
                    let logger = makeLogger("herald", config)
                    let records = try await withPostgres(config.database, logger: logger) { client in
                        try await AppStore(client: client, logger: logger).all()
                    }
                    let lines = AppsReport.lines(records, defaultTopic: config.topic, now: Date())
                    for line in lines { print(line) }
                    unusable = lines.contains { $0.contains("UNUSABLE") || $0.contains("EXPIRED") }
                }
            } catch {
                throw readable(error)
            }
            if unusable { throw ExitCode.failure }
        }
    }

    /// `herald config keys`
    struct Keys: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keys",
            abstract: "Print every setting as the table of docs/operators.md: variable, key in a configuration file, default, meaning.")

        func run() {
            print(ConfigurationKey.markdownTable)
        }
    }
}
