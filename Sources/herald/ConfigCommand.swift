import Settings
import ArgumentParser
import Foundation
import Runner

/// `herald config`: what the settings are, and which keys there are.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check the settings (environment and configuration file), or list every key.",
        subcommands: [Check.self, Keys.self])

    /// `herald config check [--config FILE]`
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Read the settings as the other commands do; print each one's value and where it came from.",
            discussion: """
                Secrets are shown as "(set; hidden)". The APNs settings are checked too (the key \
                file read) when any of APNS_KEY_PATH, APNS_KEY_ID, APNS_TEAM_ID is given. Exit status: \
                0 every setting is valid; 1 otherwise, with a message naming the first invalid one. \
                Connects to nothing.
                """)

        @OptionGroup var settings: ConfigFileOption

        func run() throws {
            do {
                let config = try settings.load()
                if config.source.namesAPNs { _ = try config.apnsConfiguration() }
                if let file = config.source.file { print("configuration file: \(file.path)") }
                for line in config.source.lines() { print(line) }
            } catch {
                throw readable(error)
            }
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
