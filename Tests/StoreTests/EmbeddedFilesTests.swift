import Foundation
import Store
import Testing
import TestSupport

/// The binary carries `Sql/` (the EmbedFiles plugin): what it embeds must be
/// the repository's files byte for byte, or a copied binary would apply
/// migrations whose checksums differ from those `HERALD_SQL_DIR` gives.
@Suite("Embedded SQL files")
struct EmbeddedFilesTests {
    static let folder = SQLFiles.directory(TestDatabase.sqlDirectory)

    @Test func theBinaryCarriesEveryMigrationAsItIsOnDisk() throws {
        let embedded = try Migrator(files: .embedded).migrations()
        let onDisk = try Migrator(files: Self.folder).migrations()
        #expect(embedded.map(\.name) == onDisk.map(\.name))
        #expect(embedded.map(\.checksum) == onDisk.map(\.checksum))
        #expect(!embedded.isEmpty)
        // Sql/history/ (what the 1.0.0 baseline replaced) is carried beside them, under history/,
        // for a database made by part of it to finish it.
        let history = try Migrator(files: .embedded).history()
        #expect(history.map(\.name) == (try Migrator(files: Self.folder).history()).map(\.name))
        #expect(history.map(\.checksum) == (try Migrator(files: Self.folder).history()).map(\.checksum))
        #expect(history.first?.name == "0001_init.sql" && history.last?.name == "0052_schema_comments.sql")
        #expect(try !SQLFiles.embedded.names().contains { $0.hasPrefix("0001_") })
    }

    @Test func theDemosSampleDataIsEmbeddedToo() throws {
        for name in ["sample_data.sql", "sample_devices.tsv"] {
            #expect(try SQLFiles.embedded.data(name) == Self.folder.data(name), "\(name)")
        }
        // schema.sql is for reading, generated from the migrations: not carried.
        #expect(try !SQLFiles.embedded.names().contains("schema.sql"))
    }

    @Test func aMissingFileIsNamed() {
        do {
            _ = try SQLFiles.embedded.data("9999_none.sql")
            Issue.record("a missing file was found")
        } catch {
            #expect("\(error)".contains("9999_none.sql"))
        }
    }

    static let builtInCheckout = FileManager.default.fileExists(
        atPath: TestDatabase.sqlDirectory.deletingLastPathComponent().appendingPathComponent(".git").path)

    // Built in a git checkout (CI and every clone): a 40-digit commit id.
    @Test(.enabled(if: builtInCheckout, "built in a git checkout")) func theBuildNamesItsCommit() {
        #expect(BuildCommit.id.count == 40 && BuildCommit.id.allSatisfy(\.isHexDigit), "\(BuildCommit.id)")
    }
}
