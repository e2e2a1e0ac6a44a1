import Crypto
import Foundation
import Logging
import PostgresNIO
import Store

/// A database of its own for each test, on the server that `scripts/test`
/// starts (`DATABASE_URL`). Databases are cloned from a template that has the
/// current migrations, so a test starts from the real schema in milliseconds,
/// and tests run in any order and in parallel.
public enum TestDatabase {
    public static let logger: Logger = {
        var l = Logger(label: "herald.tests")
        l.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        return l
    }()

    /// The repository's `Sql/` folder.
    public static let sqlDirectory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sql")

    /// `Sql/history/`: the migrations 0001 to 0052 that the 1.0.0 baseline
    /// replaced (not applied by `herald migrate`; tests that need the schema
    /// as it was before some migration read them here).
    public static let sqlHistoryDirectory: URL = sqlDirectory.appendingPathComponent("history")

    public struct MissingServer: Error, CustomStringConvertible {
        public var description: String {
            "DATABASE_URL is not set: run the tests with scripts/test, which starts a throwaway PostgreSQL"
        }
    }

    public static func server() throws -> DatabaseConfiguration {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else {
            throw MissingServer()
        }
        return try DatabaseConfiguration(url: url, maxConnections: 4)
    }

    /// `database` as a login role that is a member of `group` alone
    /// (`herald_job`, `herald_intake`, `herald_analyst`, …), as
    /// docs/operators.md ("Database roles") has each process log in. The role
    /// belongs to the server and stays for the next test: `herald_t_<group>`.
    public static func member(of group: String, _ database: DatabaseConfiguration) async throws -> DatabaseConfiguration {
        let role = "herald_t_" + group.replacingOccurrences(of: "herald_", with: "") + "_login"
        try await withPostgres(database, logger: logger) { client in
            // Two tests may make it at once: the loser's error is harmless.
            for attempt in 1...5 {
                do {
                    try await client.query(PostgresQuery(unsafeSQL: """
                        DO $$ BEGIN
                            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(role)') THEN
                                CREATE ROLE \(role) LOGIN IN ROLE \(group);
                            ELSIF NOT pg_has_role('\(role)', '\(group)', 'MEMBER') THEN
                                GRANT \(group) TO \(role);
                            END IF;
                        END $$
                        """), logger: logger)
                    break
                } catch where attempt < 5 {
                    try await Task.sleep(for: .milliseconds(50 * attempt))
                }
            }
        }
        var config = database
        config.username = role
        config.password = nil
        return config
    }

    /// Runs `body` against a new database: migrated (from the template) or empty.
    public static func with<T: Sendable>(
        migrated: Bool = true,
        _ body: @Sendable (Database, DatabaseConfiguration) async throws -> T
    ) async throws -> T {
        let server = try server()
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let template = migrated ? try await Templates.shared.template(server: server) : "template0"
        try await admin(server) { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name) TEMPLATE \(template)"), logger: logger)
        }
        let config = server.with(database: name)
        do {
            let result = try await withPostgres(config, logger: logger) { client in try await body(client, config) }
            try await drop(name, server: server)
            return result
        } catch {
            try? await drop(name, server: server)
            throw error
        }
    }

    static func drop(_ name: String, server: DatabaseConfiguration) async throws {
        try await admin(server) { client in
            try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"), logger: logger)
        }
    }

    static func admin(_ server: DatabaseConfiguration, _ body: @Sendable (Database) async throws -> Void) async throws {
        try await withPostgres(server, logger: logger, body)
    }

    /// The template database for the current migrations, made once per
    /// migration set (its name carries their checksum) and shared by test
    /// processes through an advisory lock.
    actor Templates {
        static let shared = Templates()
        private var made: String?

        func template(server: DatabaseConfiguration) async throws -> String {
            if let made { return made }
            let migrations = try Migrator(directory: sqlDirectory).migrations()
            var hasher = SHA256()
            for m in migrations { hasher.update(data: Data(m.checksum.utf8)) }
            let digest = hasher.finalize().prefix(6).map { String(format: "%02x", $0) }.joined()
            let name = "herald_template_\(digest)"
            try await withPostgres(server, logger: logger) { client in
                try await client.withConnection { conn in
                    try await conn.query("SELECT pg_advisory_lock(4242)", logger: logger)
                    do {
                        var exists = false
                        for try await _ in try await conn.query(
                            "SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger).decode(Int32.self) {
                            exists = true
                        }
                        if !exists {
                            let building = name + "_new"
                            try await conn.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(building) WITH (FORCE)"), logger: logger)
                            try await conn.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(building) TEMPLATE template0"), logger: logger)
                            _ = try await withPostgres(server.with(database: building), logger: logger) { c in
                                try await Migrator(directory: sqlDirectory).migrate(client: c, logger: logger)
                            }
                            try await conn.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(building) RENAME TO \(name)"), logger: logger)
                        }
                        _ = try? await conn.query("SELECT pg_advisory_unlock(4242)", logger: logger)
                    } catch {
                        _ = try? await conn.query("SELECT pg_advisory_unlock(4242)", logger: logger)
                        throw error
                    }
                }
            }
            made = name
            return name
        }
    }
}

extension Database {
    /// Holds `LOCK TABLE table IN EXCLUSIVE MODE` in a transaction of its own
    /// until `released` ends; `locked` is finished once the lock is held.
    public func holdingLock(on table: String, locked: AsyncStream<Void>.Continuation,
                            until released: AsyncStream<Void>) async throws {
        try await withConnection { conn in
            try await conn.query("BEGIN", logger: TestDatabase.logger)
            try await conn.query(PostgresQuery(unsafeSQL: "LOCK TABLE \(table) IN EXCLUSIVE MODE"), logger: TestDatabase.logger)
            locked.finish()
            for await _ in released {}
            try await conn.query("COMMIT", logger: TestDatabase.logger)
        }
    }

    /// Runs a SQL text of one or more statements (fixtures in tests).
    public func exec(_ sql: String, logger: Logger = TestDatabase.logger) async throws {
        for statement in SQLScript.statements(in: sql) {
            try await query(PostgresQuery(unsafeSQL: statement), logger: logger)
        }
    }

    /// The error text a marketer sees for `sql` (with the constraint's name
    /// in braces when one refused it), or nil when it was taken.
    public func refusal(_ sql: String) async -> String? {
        do {
            try await exec(sql)
            return nil
        } catch {
            let constraint = StoreError.constraint(of: error).map { " {\($0)}" } ?? ""
            return ErrorText.describe(error) + constraint
        }
    }

    /// Approves `campaign` as another person: a new login role, a member of
    /// `herald_approver`, for the session (dropped afterwards).
    public func approveAsAnotherPerson(_ campaign: Int64) async throws {
        let approver = "herald_t_approver_\(UUID().uuidString.prefix(8).lowercased())"
        try await exec("CREATE ROLE \(approver) LOGIN; GRANT herald_approver TO \(approver)")
        do {
            try await withConnection { conn in
                _ = try await conn.query(PostgresQuery(unsafeSQL: "SET SESSION AUTHORIZATION \(approver)"), logger: TestDatabase.logger)
                for try await _ in try await conn.query("SELECT herald_approve(\(campaign))", logger: TestDatabase.logger) {}
                _ = try await conn.query("RESET SESSION AUTHORIZATION", logger: TestDatabase.logger)
            }
        } catch {
            try? await exec("DROP ROLE \(approver)")
            throw error
        }
        // Its approval stays in campaign_approvals by name; the role goes.
        try await exec("DROP ROLE \(approver)")
    }

    /// The first column of the first row of `sql`.
    public func scalar<T: PostgresDecodable & Sendable>(_ sql: String, as: T.Type = T.self) async throws -> T? {
        for try await v in try await query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).decode(T.self) {
            return v
        }
        return nil
    }
}
