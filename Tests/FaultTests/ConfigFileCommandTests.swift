import Foundation
import PostgresNIO
import Store
import TestSupport
import Testing

/// The built `herald` with `--config FILE` / `HERALD_CONFIG` and no
/// database in its environment, against a database of its own.
@Suite("herald --config")
struct ConfigFileCommandTests {
    /// The environment of the child, without any of Herald's settings.
    static func bareEnvironment() -> [String: String] {
        ProcessInfo.processInfo.environment.filter { name, _ in
            !(name.hasPrefix("HERALD_") || name.hasPrefix("APNS_") || name.hasPrefix("DATABASE_") || name == "LOG_LEVEL")
        }
    }

    @Test func migrateReadsTheDatabaseFromTheFileAndRefusesATypo() async throws {
        try await TestDatabase.with(migrated: false) { client, database in
            try await withScratch { dir in
                let sql = HeraldBinary.repository.appendingPathComponent("Sql").path
                let good = dir.appendingPathComponent("herald.toml").path
                try """
                    [database]
                    url = "\(database.description)"
                    sql_dir = "\(sql)"
                    connections = 2

                    [log]
                    level = "warning"
                    """.write(toFile: good, atomically: true, encoding: .utf8)
                // A misspelt key: refused before anything touches the database.
                let typo = dir.appendingPathComponent("typo.toml").path
                try """
                    [database]
                    url = "\(database.description)"
                    sql_dir = "\(sql)"
                    conections = 2
                    """.write(toFile: typo, atomically: true, encoding: .utf8)

                let refused = try Child(name: "migrate-typo", arguments: ["migrate", "--config", typo],
                                        environment: Self.bareEnvironment(), directory: dir)
                #expect(try await refused.wait(limit: .seconds(60)) == 1)
                #expect(refused.text().contains("database.conections") && refused.text().contains(typo), "\(refused.tail())")
                #expect(try await client.scalar("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", as: Int64.self) == 0)

                // --config: the file names the database, the environment none.
                let migrate = try Child(name: "migrate", arguments: ["migrate", "--config", good],
                                        environment: Self.bareEnvironment(), directory: dir)
                #expect(try await migrate.wait(limit: .seconds(120)) == 0, "\(migrate.tail())")
                #expect(migrate.text().contains("migrate: applied 0100_release_1_0_0"), "\(migrate.tail())")
                #expect(try await client.scalar("SELECT to_regclass('public.campaigns')::text", as: String.self) == "campaigns")

                // HERALD_CONFIG names the same file; the environment still overrides it.
                var env = Self.bareEnvironment()
                env["HERALD_CONFIG"] = good
                let again = try Child(name: "migrate-again", arguments: ["migrate"], environment: env, directory: dir)
                #expect(try await again.wait(limit: .seconds(60)) == 0, "\(again.tail())")
                #expect(again.text().contains("migrate: up to date"), "\(again.tail())")
                env["HERALD_DB_CONNECTIONS"] = "1"
                let overridden = try Child(name: "migrate-env", arguments: ["migrate"], environment: env, directory: dir)
                #expect(try await overridden.wait(limit: .seconds(60)) == 1)
                #expect(overridden.text().contains("HERALD_DB_CONNECTIONS must be a whole number from 2 to 100"), "\(overridden.tail())")
            }
        }
    }

    @Test func everyCommandThatReadsSettingsTakesConfig() async throws {
        try await withScratch { dir in
            for command in [["migrate"], ["run"], ["serve"], ["ingest"], ["report"], ["preview"], ["send-test"],
                            ["demo"], ["config", "check"], ["prune"], ["ingest-conversions"], ["apps", "list"]] {
                let help = try Child(name: "help-\(command.joined(separator: "-"))", arguments: command + ["--help"],
                                     environment: Self.bareEnvironment(), directory: dir)
                #expect(try await help.wait(limit: .seconds(30)) == 0)
                #expect(help.text().contains("--config <file>"), "herald \(command.joined(separator: " ")): \(help.tail())")
            }
        }
    }
}
