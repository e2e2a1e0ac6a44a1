import Foundation
import PostgresNIO
@testable import Store
import Testing
import TestSupport

@Suite("Migrations")
struct MigrationTests {
    @Test func applyFromEmptyThenNoOp() async throws {
        try await TestDatabase.with(migrated: false) { client, _ in
            let migrator = Migrator(directory: TestDatabase.sqlDirectory)
            let first = try await migrator.migrate(client: client, logger: TestDatabase.logger)
            let files = try migrator.migrations().map(\.name)
            #expect(first == files)
            #expect(first.first == "0100_release_1_0_0.sql")  // the 1.0.0 baseline, then what follows
            let second = try await migrator.migrate(client: client, logger: TestDatabase.logger)
            #expect(second.isEmpty)
            #expect(try await client.scalar("SELECT count(*) FROM herald_migrations", as: Int64.self) == Int64(files.count))
            // The schema is there: the sample data loads on top.
            try await SQLScript.run(file: TestDatabase.sqlDirectory.appendingPathComponent("sample_data.sql"),
                                    on: client, logger: TestDatabase.logger)
            #expect(try await client.scalar("SELECT count(*) FROM campaigns WHERE status = 'scheduled' AND journey_id IS NULL", as: Int64.self) == 4, "the poster, the flash sale, the feedback prompt and the Live Activity sale")
            #expect(try await client.scalar("SELECT count(*) FROM journeys WHERE status = 'running'", as: Int64.self) == 1, "After the order")
        }
    }

    @Test func changedMigrationIsRefused() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sql-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["0001_init.sql", "0002_analyst.sql"] {
            try FileManager.default.copyItem(at: TestDatabase.sqlHistoryDirectory.appendingPathComponent(name),
                                             to: dir.appendingPathComponent(name))
        }
        try await TestDatabase.with(migrated: false) { client, _ in
            let migrator = Migrator(directory: dir)
            try await migrator.migrate(client: client, logger: TestDatabase.logger)
            let file = dir.appendingPathComponent("0002_analyst.sql")
            try (String(contentsOf: file, encoding: .utf8) + "\n-- edited\n").write(to: file, atomically: true, encoding: .utf8)
            do {
                try await migrator.migrate(client: client, logger: TestDatabase.logger)
                Issue.record("a changed migration was accepted")
            } catch let error as StoreError {
                #expect(error.isMigrationError)
                #expect(error.message.contains("0002_analyst.sql"))
                #expect(error.message.contains("must not change"))
            }
            // A new numbered file is applied; a broken one is rolled back whole.
            try "CREATE TABLE extra_a (id int); CREATE TABLE extra_b (id nonsense_type);"
                .write(to: dir.appendingPathComponent("0003_broken.sql"), atomically: true, encoding: .utf8)
            try (String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: "\n-- edited\n", with: ""))
                .write(to: file, atomically: true, encoding: .utf8)
            await #expect(throws: StoreError.self) { try await migrator.migrate(client: client, logger: TestDatabase.logger) }
            #expect(try await client.scalar("SELECT count(*) FROM pg_tables WHERE tablename = 'extra_a'", as: Int64.self) == 0)
            #expect(try await client.scalar("SELECT count(*) FROM herald_migrations", as: Int64.self) == 2)
        }
    }

    @Test func aSchemaAppliedWithPsqlIsAdopted() async throws {
        try await TestDatabase.with(migrated: false) { client, _ in
            let migrator = Migrator(directory: TestDatabase.sqlDirectory)
            let files = try migrator.migrations()
            // Every file, from the baseline on, says how to recognise it once applied.
            for file in files {
                #expect(file.sql.contains("\n-- applied-if: "), "\(file.name) has no applied-if line")
            }
            // All applied by hand, as `psql -f` would; then adopted, none applied twice.
            for file in files {
                try await SQLScript.run(file: TestDatabase.sqlDirectory.appendingPathComponent(file.name),
                                        on: client, logger: TestDatabase.logger)
            }
            let applied = try await migrator.migrate(client: client, logger: TestDatabase.logger)
            #expect(applied.isEmpty)
            #expect(try await client.scalar("SELECT count(*) FROM herald_migrations", as: Int64.self) == Int64(files.count))
            #expect(try await migrator.migrate(client: client, logger: TestDatabase.logger).isEmpty)
        }
    }

    /// A database made by hand with the history (every file of Sql/history/,
    /// `psql -1 -f` one after another, as before the 1.0.0 baseline): the
    /// history's migrator adopts each file (0001 and 0002, and the replaced
    /// 0008, 0016 and 0017, by `Migrator.knownMarkers`), and today's adopts
    /// the baseline; neither runs anything.
    @Test func theHistoryAppliedWithPsqlIsAdopted() async throws {
        try await TestDatabase.with(migrated: false) { client, _ in
            let history = Migrator(directory: TestDatabase.sqlHistoryDirectory)
            let files = try history.migrations()
            for file in files {
                try await SQLScript.run(file: TestDatabase.sqlHistoryDirectory.appendingPathComponent(file.name),
                                        on: client, logger: TestDatabase.logger)
            }
            // The baseline is adopted; the migrations after it are applied.
            let current = Migrator(directory: TestDatabase.sqlDirectory)
            let later = try current.migrations().dropFirst().map(\.name)
            #expect(try await current.migrate(client: client, logger: TestDatabase.logger) == later)
            #expect(try await client.scalar("SELECT count(*) FROM herald_migrations", as: Int64.self) == Int64(1 + later.count))
            #expect(try await history.migrate(client: client, logger: TestDatabase.logger).isEmpty)
            #expect(try await client.scalar("SELECT count(*) FROM herald_migrations", as: Int64.self) == Int64(files.count + 1 + later.count))
        }
    }

    @Test func aFailedMigrationKeepsItsCause() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sql-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try "CREATE TABLE t (id nonsense_type);".write(to: dir.appendingPathComponent("0001_bad.sql"), atomically: true, encoding: .utf8)
        try await TestDatabase.with(migrated: false) { client, _ in
            do {
                try await Migrator(directory: dir).migrate(client: client, logger: TestDatabase.logger)
                Issue.record("a broken migration was applied")
            } catch let error as StoreError {
                #expect(error.message.contains("nonsense_type"))
                #expect(StoreError.sqlState(of: try #require(error.underlying)) == "42704")
            }
        }
    }

    @Test func sqlScriptSplitsLikePsql() {
        let sql = """
            -- a comment; with a semicolon
            CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;
            INSERT INTO t VALUES ('a;b', 'it''s; fine'); /* block; comment */
            SELECT $tag$ ; $tag$;
            SELECT "odd;name" FROM x
            """
        let statements = SQLScript.statements(in: sql)
        #expect(statements.count == 4)
        #expect(statements[0].hasSuffix("END $$"))
        #expect(statements[1].hasPrefix("INSERT"))
        #expect(statements[3].hasSuffix("FROM x"))
    }

    @Test func analystRoleSeesViewsOnly() async throws {
        try await TestDatabase.with { client, config in
            try await client.exec("""
                DO $$ BEGIN CREATE ROLE herald_test_analyst LOGIN IN ROLE herald_analyst;
                EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
                """)
            var analyst = config
            analyst.username = "herald_test_analyst"
            try await withPostgres(analyst, logger: TestDatabase.logger) { a in
                let rows = try await a.scalar("SELECT count(*) FROM analyst.campaign_funnel", as: Int64.self)
                #expect(rows == 0)
                await #expect(throws: (any Error).self) { _ = try await a.scalar("SELECT count(*) FROM campaigns", as: Int64.self) }
                await #expect(throws: (any Error).self) { try await a.exec("DELETE FROM analyst.runs") }
                await #expect(throws: (any Error).self) { try await a.exec("CREATE TABLE public.mine (id int)") }
            }
        }
    }
}
