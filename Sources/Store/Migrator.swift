import Crypto
import Foundation
import Logging
import PostgresNIO

/// Applies the `NNNN_name.sql` migrations (`SQLFiles`) in order, each in its own transaction,
/// and records each file's name and SHA-256 in `herald_migrations`. Files
/// applied before are skipped; one that changed since is refused. The first
/// file is the baseline of release 1.0.0 (`0100_release_1_0_0.sql`), which
/// replaced the files now in `Sql/history/`: their rows in a database made
/// before it are skipped, and such a database adopts the baseline by its
/// marker (Sql/README.md, "The 1.0.0 baseline").
public struct Migrator: Sendable {
    public struct Migration: Sendable, Hashable {
        public var name: String
        public var sql: String
        public var checksum: String
    }

    public let files: SQLFiles

    public init(files: SQLFiles) {
        self.files = files
    }

    public init(directory: URL) {
        self.init(files: .directory(directory))
    }

    /// The numbered migrations, in order.
    public func migrations() throws(StoreError) -> [Migration] {
        let numbered = try files.names().filter(Self.isMigration)
        guard !numbered.isEmpty else {
            throw StoreError.migration("no migrations (NNNN_name.sql) in \(files)")
        }
        return try read(numbered)
    }

    /// The files the baseline replaced (`history/NNNN_name.sql`), in order, named as a
    /// database made by them recorded them.
    public func history() throws(StoreError) -> [Migration] {
        let names = try files.names().filter { $0.hasPrefix("history/") && Self.isMigration(String($0.dropFirst("history/".count))) }
        return try read(names).map { Migration(name: String($0.name.dropFirst("history/".count)), sql: $0.sql, checksum: $0.checksum) }
    }

    static func isMigration(_ name: String) -> Bool {
        name.hasSuffix(".sql") && name.prefix(4).allSatisfy(\.isNumber) && name.dropFirst(4).first == "_"
    }

    private func read(_ numbered: [String]) throws(StoreError) -> [Migration] {
        var result: [Migration] = []
        for name in numbered {
            let data = try files.data(name)
            guard let sql = String(data: data, encoding: .utf8) else {
                throw StoreError.migration("cannot read \(name) (\(files)) as UTF-8 text")
            }
            let digest = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
            result.append(Migration(name: name, sql: sql, checksum: digest))
        }
        return result
    }

    /// Applies what is pending; returns the names applied now.
    @discardableResult
    public func migrate(client: Database, logger: Logger) async throws -> [String] {
        let files = try migrations()
        return try await client.withConnection { conn in
            try await conn.query("""
                CREATE TABLE IF NOT EXISTS herald_migrations (
                    name        text PRIMARY KEY,
                    checksum    text NOT NULL,
                    applied_at  timestamptz NOT NULL DEFAULT now())
                """, logger: logger)
            // Several migrators at once (two deploys, parallel tests) take turns.
            try await conn.query("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
            do {
                let applied = try await appliedChecksums(conn, logger: logger)
                // Rows of files that are no longer in the set (the history the
                // baseline replaced): the record of what was applied, skipped.
                let names = Set(files.map(\.name))
                let retired = applied.keys.filter { !names.contains($0) }.sorted()
                if !retired.isEmpty {
                    logger.debug("herald_migrations records files that are no longer migrations here; skipped",
                                 metadata: ["count": "\(retired.count)", "last": "\(retired.last ?? "")"])
                }
                var done: [String] = []
                for file in files {
                    if try await bring(file, applied: applied, conn, logger: logger) == .adopted { continue }
                    if let last = retired.last, file.name == files.first?.name {
                        // Made by files before the baseline, but not all of them: the history
                        // the binary carries is finished first, then the baseline is adopted.
                        let history = try self.history()
                        guard !history.isEmpty else {
                            throw StoreError.migration(
                                "this database was migrated with the files before \(file.name) only up to \(last) (\(retired.count) recorded), and \(self.files) holds no history/ to finish them with: migrate with a herald of this release, or apply the rest of Sql/history/ with psql -1 -f, then migrate again")
                        }
                        logger.notice("finishing the migrations the baseline replaced", metadata: ["from": "\(last)"])
                        for old in history where try await bring(old, applied: applied, conn, logger: logger) == .pending {
                            try await apply(old, conn, logger: logger)
                            done.append(old.name)
                        }
                        guard try await bring(file, applied: applied, conn, logger: logger) == .adopted else {
                            throw StoreError.migration("\(file.name) is not adopted by a database with the whole history: its applied-if line and the history disagree")
                        }
                        continue
                    }
                    try await apply(file, conn, logger: logger)
                    done.append(file.name)
                }
                try await conn.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return done
            } catch {
                _ = try? await conn.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                throw error
            }
        }
    }

    static let lockKey: Int64 = 0x4845_5241_4C44  // "HERALD"

    enum Found { case adopted, pending }

    /// A file recorded already (with its checksum, or it is refused), or there already and
    /// recorded now (adopted); else pending.
    private func bring(_ file: Migration, applied: [String: String], _ conn: PostgresConnection,
                       logger: Logger) async throws -> Found {
        if let old = applied[file.name] {
            guard old == file.checksum else {
                throw StoreError.migration(
                    "migration \(file.name) was applied with checksum \(old.prefix(12))… but the file now has \(file.checksum.prefix(12))…; applied migrations must not change: add a new numbered file instead")
            }
            return .adopted
        }
        guard try await alreadyThere(file, conn, logger: logger) else { return .pending }
        // Applied by hand (psql -f) before herald_migrations knew it: adopt it.
        try await conn.query("INSERT INTO herald_migrations (name, checksum) VALUES (\(file.name), \(file.checksum))",
                             logger: logger)
        logger.notice("adopted a migration applied by hand", metadata: ["migration": "\(file.name)"])
        return .adopted
    }

    /// How to tell that a migration's objects already exist: the files of
    /// before this rule by name, later files by an `-- applied-if: <query>`
    /// line of their own (a query returning one boolean). A file whose
    /// objects a later one dropped is told here by what replaced them (an
    /// applied file is never edited: its checksum is recorded).
    ///
    /// Every entry names a file of `Sql/history/`, so they count only when
    /// the migrator reads that folder (`HERALD_SQL_DIR=Sql/history`, the way
    /// forward for a database half-way through the history; BaselineTests
    /// and MigrationTests). The current set, from the baseline on, needs none.
    static let knownMarkers = [
        "0001_init.sql": "SELECT to_regclass('public.deliveries') IS NOT NULL",
        "0002_analyst.sql": "SELECT to_regclass('analyst.campaign_funnel') IS NOT NULL",
        // Its index made way for deliveries_device_campaign_once.
        "0008_test_sends.sql": "SELECT to_regclass('public.deliveries_campaign_once') IS NOT NULL OR to_regclass('public.deliveries_device_campaign_once') IS NOT NULL",
        // Their procedures made way for herald_commit_replies.
        "0016_store_replies.sql": Self.storedRepliesMarker("herald_store_replies(uuid[],bigint[],bigint[],bigint[],bigint[],text[],boolean[],text[],double precision[],text,uuid[])"),
        "0017_take_replies.sql": Self.storedRepliesMarker("herald_take_replies(uuid[],bigint[],text[],boolean[],text[],double precision[],boolean[],text,bigint[],bigint[],bigint[],bigint[],text[],boolean[],integer[],uuid[])"),
    ]

    private static func storedRepliesMarker(_ procedure: String) -> String {
        "SELECT to_regprocedure('public.\(procedure)') IS NOT NULL OR to_regprocedure('public.herald_commit_replies(uuid[],bigint[],text[],boolean[],text[],double precision[],boolean[],text,integer,integer[],integer[])') IS NOT NULL"
    }

    static func marker(of file: Migration) -> String? {
        if let known = knownMarkers[file.name] { return known }
        for line in file.sql.split(separator: "\n") where line.hasPrefix("-- applied-if:") {
            return line.dropFirst("-- applied-if:".count).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// True when a migration not recorded in `herald_migrations` was applied
    /// anyway, by `psql -f`.
    private func alreadyThere(_ file: Migration, _ conn: PostgresConnection, logger: Logger) async throws -> Bool {
        guard let marker = Self.marker(of: file) else { return false }
        for try await present in try await conn.query(PostgresQuery(unsafeSQL: marker), logger: logger).decode(Bool.self) {
            return present
        }
        return false
    }

    private func appliedChecksums(_ conn: PostgresConnection, logger: Logger) async throws -> [String: String] {
        var out: [String: String] = [:]
        let rows = try await conn.query("SELECT name, checksum FROM herald_migrations", logger: logger)
        for try await (name, checksum) in rows.decode((String, String).self) {
            out[name] = checksum
        }
        return out
    }

    private func apply(_ file: Migration, _ conn: PostgresConnection, logger: Logger) async throws {
        var logger = logger
        logger[metadataKey: "migration"] = "\(file.name)"
        let statements = SQLScript.statements(in: file.sql)
        try await conn.query("BEGIN", logger: logger)
        do {
            for statement in statements {
                try await conn.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await conn.query(
                "INSERT INTO herald_migrations (name, checksum) VALUES (\(file.name), \(file.checksum))",
                logger: logger)
            try await conn.query("COMMIT", logger: logger)
            logger.info("applied migration")
        } catch {
            _ = try? await conn.query("ROLLBACK", logger: logger)
            throw StoreError.migration("migration \(file.name) failed and was rolled back: \(ErrorText.describe(error))",
                                       underlying: error)
        }
    }
}
