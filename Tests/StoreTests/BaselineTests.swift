import Crypto
import Foundation
import PostgresNIO
@testable import Store
import Testing
import TestSupport

/// The 1.0.0 baseline (`Sql/0100_release_1_0_0.sql`) and the history it
/// replaced (`Sql/history/`, 0001 to 0052); Sql/README.md, "The 1.0.0
/// baseline". A database made by the history and one made by the baseline
/// are the same: the same `scripts/schema --dump` picture (as SchemaTests
/// takes it), the same grants, the same rows. A database made by the history
/// adopts the baseline and migrates forward. And every released migration is
/// never edited again: its SHA-256 is in `Sql/checksums.txt`.
@Suite("Baseline of release 1.0.0")
struct BaselineTests {
    static let baseline = "0100_release_1_0_0.sql"

    @Test func theHistoryAndTheBaselineMakeTheSameDatabaseWhichThenAdoptsIt() async throws {
        let history = Migrator(directory: TestDatabase.sqlHistoryDirectory)
        let current = Migrator(directory: TestDatabase.sqlDirectory)
        #expect(try current.migrations().first?.name == Self.baseline)
        let later = try current.migrations().dropFirst().map(\.name)
        // The baseline alone, as release 1.0.0 shipped it.
        let released = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sql-\(UUID())")
        try FileManager.default.createDirectory(at: released, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: released) }
        try FileManager.default.copyItem(at: TestDatabase.sqlDirectory.appendingPathComponent(Self.baseline),
                                         to: released.appendingPathComponent(Self.baseline))
        let release = Migrator(directory: released)
        try await TestDatabase.with(migrated: false) { a, configA in
            try await TestDatabase.with(migrated: false) { b, configB in
                // A: the history, as herald migrate applied it before the release; B: today's Sql/.
                let fromHistory = try await history.migrate(client: a, logger: TestDatabase.logger)
                #expect(fromHistory.count == 50 && fromHistory.last == "0052_schema_comments.sql")
                #expect(try await release.migrate(client: b, logger: TestDatabase.logger) == [Self.baseline])

                // (a) The same picture, byte for byte, the same grants, the same rows.
                let pictureA = try await SchemaTests.picture(ofDatabase: configA.database)
                let pictureB = try await SchemaTests.picture(ofDatabase: configB.database)
                #expect(!pictureA.isEmpty)
                if pictureA != pictureB {
                    Issue.record("\(Self.difference("the history's database (scripts/schema --dump)", String(decoding: pictureA, as: UTF8.self), "the baseline's", String(decoding: pictureB, as: UTF8.self)))")
                }
                let grantsA = try await Self.lines(a, Self.privileges)
                #expect(grantsA.count > 100)
                let grantsB = try await Self.lines(b, Self.privileges)
                if grantsA != grantsB {
                    Issue.record("\(Self.difference("the history's grants", grantsA.joined(separator: "\n"), "the baseline's", grantsB.joined(separator: "\n")))")
                }
                let rowsA = try await Self.rows(a)
                let rowsB = try await Self.rows(b)
                #expect(rowsA.keys.sorted() == ["public.apns_id_prefix", "public.apps", "public.campaign_approval_columns", "public.settings"],
                        "the tables the history fills as it migrates")
                for table in Set(rowsA.keys).union(rowsB.keys).sorted() where rowsA[table] != rowsB[table] {
                    Issue.record("\(Self.difference("\(table) in the history's database", (rowsA[table] ?? []).joined(separator: "\n"), "in the baseline's", (rowsB[table] ?? []).joined(separator: "\n")))")
                }
                #expect(try await Self.lines(a, Self.sequences) == Self.lines(b, Self.sequences))

                // (b) Today's migrator on A: adopts the baseline by its marker, runs only the
                // migrations after it, and leaves the history's rows as they were; a second
                // run is a no-op.
                let checksum = try #require(try current.migrations().first?.checksum)
                #expect(try await current.migrate(client: a, logger: TestDatabase.logger) == later)
                #expect(try await a.scalar("SELECT checksum FROM herald_migrations WHERE name = '\(Self.baseline)'", as: String.self) == checksum)
                #expect(try await a.scalar("SELECT count(*) FROM herald_migrations", as: Int64.self) == Int64(51 + later.count))
                #expect(try await current.migrate(client: a, logger: TestDatabase.logger).isEmpty)
                // The history on A finds nothing to do either; B migrates forward the same way.
                #expect(try await history.migrate(client: a, logger: TestDatabase.logger).isEmpty)
                #expect(try await current.migrate(client: b, logger: TestDatabase.logger) == later)
                let pictureAfter = try await SchemaTests.picture(ofDatabase: configA.database)
                #expect(pictureAfter == (try await SchemaTests.picture(ofDatabase: configB.database)))
            }
        }
    }

    /// A database made by part of the history (a deployment before release 1.0.0): `herald
    /// migrate` finishes the history from the files the binary carries, then adopts the
    /// baseline, and the database is the release's.
    @Test func aDatabaseHalfWayThroughTheHistoryFinishesItAndAdoptsTheBaseline() async throws {
        let partial = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sql-\(UUID())")
        try FileManager.default.createDirectory(at: partial, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: partial) }
        for m in try Migrator(directory: TestDatabase.sqlHistoryDirectory).migrations() where m.name < "0030" {
            try FileManager.default.copyItem(at: TestDatabase.sqlHistoryDirectory.appendingPathComponent(m.name),
                                             to: partial.appendingPathComponent(m.name))
        }
        try await TestDatabase.with(migrated: false) { client, config in
            try await Migrator(directory: partial).migrate(client: client, logger: TestDatabase.logger)
            let current = Migrator(files: .embedded)
            let done = try await current.migrate(client: client, logger: TestDatabase.logger)
            let later = try current.migrations().dropFirst().map(\.name)
            #expect(done.first == "0030_snapshot_caps.sql" && done.dropLast(later.count).last == "0052_schema_comments.sql", "\(done)")
            #expect(Array(done.suffix(later.count)) == later, "then the migrations after the baseline")
            #expect(!done.contains(Self.baseline), "adopted, not run")
            #expect(try await client.scalar("SELECT count(*) FROM herald_migrations WHERE name = '\(Self.baseline)'", as: Int64.self) == 1)
            #expect(try await current.migrate(client: client, logger: TestDatabase.logger).isEmpty)
            let picture = try await SchemaTests.picture(ofDatabase: config.database)
            let expected = try #require(FileManager.default.contents(atPath: TestDatabase.sqlDirectory.appendingPathComponent("schema.sql").path))
            #expect(picture == expected, "the database is the release's (Sql/schema.sql)")
        }
    }

    /// (c) From release 1.0.0 on, a committed migration is never edited: each
    /// file's SHA-256, as the Migrator computes it, is the one recorded in
    /// `Sql/checksums.txt`, and every migration (and every file of the
    /// history) has its line there.
    @Test func everyMigrationHasItsReleasedChecksum() throws {
        let file = TestDatabase.sqlDirectory.appendingPathComponent("checksums.txt")
        let text = try String(contentsOf: file, encoding: .utf8)
        var recorded: [String: String] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            // sha256sum's format: 64 hex digits, two spaces, the path in Sql/.
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].count == 64, parts[0].allSatisfy(\.isHexDigit), parts[1].hasPrefix(" ") else {
                Issue.record("Sql/checksums.txt: not a line of `sha256sum` (64 hex digits, two spaces, a path): \(line)")
                continue
            }
            let path = String(parts[1].dropFirst())
            #expect(recorded[path] == nil, "Sql/checksums.txt lists \(path) twice")
            recorded[path] = String(parts[0])
        }
        var actual: [String: String] = [:]
        for m in try Migrator(directory: TestDatabase.sqlDirectory).migrations() {
            actual[m.name] = m.checksum
        }
        for m in try Migrator(directory: TestDatabase.sqlHistoryDirectory).migrations() {
            actual["history/" + m.name] = m.checksum
        }
        #expect(actual[Self.baseline] != nil && actual.count == 51 + actual.keys.filter { !$0.hasPrefix("history/") && $0 > Self.baseline }.count)
        for (path, checksum) in actual.sorted(by: { $0.key < $1.key }) {
            guard let old = recorded[path] else {
                Issue.record("""
                    Sql/\(path) is a migration without its line in Sql/checksums.txt: once the file is final, add it \
                    with `(cd Sql && sha256sum \(path) >> checksums.txt)` (Sql/README.md, "Rules for a new migration")
                    """)
                continue
            }
            if old != checksum {
                Issue.record("""
                    Sql/\(path) has changed since it was released (SHA-256 \(checksum.prefix(12))…, Sql/checksums.txt records \
                    \(old.prefix(12))…): a released migration is never edited; put it back, and add a new numbered file instead
                    """)
            }
        }
        for path in recorded.keys.sorted() where actual[path] == nil {
            Issue.record("Sql/checksums.txt lists Sql/\(path), which is no migration any more: a released migration is never removed")
        }
    }

    // MARK: - Helpers

    /// Every privilege on what the migrations make: the schemas, tables,
    /// views, sequences, columns and functions, and default privileges.
    static let privileges = """
        SELECT 'schema ' || n.nspname || ' ' || coalesce(n.nspacl::text, '-')
        FROM pg_namespace n WHERE n.nspname IN ('public', 'analyst')
        UNION ALL
        SELECT 'relation ' || c.oid::regclass::text || ' ' || coalesce(c.relacl::text, '-')
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname IN ('public', 'analyst') AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
          AND c.relname NOT IN ('herald_migrations')
        UNION ALL
        SELECT 'column ' || c.oid::regclass::text || '.' || a.attname || ' ' || a.attacl::text
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname IN ('public', 'analyst') AND a.attacl IS NOT NULL AND NOT a.attisdropped
        UNION ALL
        SELECT 'routine ' || p.oid::regprocedure::text || ' ' || coalesce(p.proacl::text, '-')
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname IN ('public', 'analyst')
        UNION ALL
        SELECT 'default ' || d.defaclobjtype::text || ' ' || coalesce(d.defaclnamespace::regnamespace::text, '-') || ' ' || d.defaclacl::text
        FROM pg_default_acl d
        ORDER BY 1
        """

    static let sequences = """
        SELECT schemaname || '.' || sequencename || ' ' || coalesce(last_value::text, 'unused')
        FROM pg_sequences WHERE schemaname IN ('public', 'analyst') ORDER BY 1
        """

    /// Values that differ between two databases by design: the deployment's
    /// random apns-id prefix, and the time the `default` app was made.
    static let differByDesign: [String: [String]] = [
        "public.apns_id_prefix": ["prefix"],
        "public.apps": ["created_at"],
    ]

    /// The rows of every table that has any (but `herald_migrations`), each
    /// as JSON text, sorted.
    static func rows(_ client: Database) async throws -> [String: [String]] {
        let tables = try await lines(client, """
            SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname IN ('public', 'analyst') AND c.relkind = 'r' AND c.relname <> 'herald_migrations'
            ORDER BY 1
            """)
        var out: [String: [String]] = [:]
        for table in tables {
            let name = table.contains(".") ? table : "public." + table
            let dropped = (differByDesign[name] ?? []).map { " - '\($0)'" }.joined()
            let rows = try await lines(client, "SELECT (to_jsonb(t)\(dropped))::text FROM \(table) t ORDER BY 1")
            if !rows.isEmpty { out[name] = rows }
        }
        return out
    }

    static func lines(_ client: Database, _ sql: String) async throws -> [String] {
        var out: [String] = []
        for try await line in try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).decode(String.self) {
            out.append(line)
        }
        return out
    }

    /// Where two texts part: a few lines before, then each side's next lines.
    static func difference(_ oldName: String, _ old: String, _ newName: String, _ new: String) -> String {
        let a = old.split(separator: "\n", omittingEmptySubsequences: false)
        let b = new.split(separator: "\n", omittingEmptySubsequences: false)
        var first = 0
        while first < a.count, first < b.count, a[first] == b[first] { first += 1 }
        var out = ["\(oldName) and \(newName) differ at line \(first + 1) (\(a.count) and \(b.count) lines):", "--- \(oldName)", "+++ \(newName)"]
        for i in max(0, first - 3)..<first { out.append("  \(a[i])") }
        for i in first..<min(a.count, first + 6) { out.append("- \(a[i])") }
        for i in first..<min(b.count, first + 6) { out.append("+ \(b[i])") }
        return out.joined(separator: "\n")
    }
}
