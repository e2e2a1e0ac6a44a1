import Foundation
@testable import Settings
import Testing
import TestSupport

/// docs/operators.md's "Configuration" table is `ConfigurationKey.markdownTable`:
/// every key the code reads, in one place, and nothing else (`herald config
/// keys` prints the same table).
@Suite("The configuration table")
struct ConfigurationTableTests {
    @Test("every key in one place: each file key maps to one variable, docs/operators.md lists every key")
    func readmeListsEveryKey() throws {
        let environments = ConfigurationKey.all.map(\.environment)
        #expect(Set(environments).count == environments.count)
        let fileKeys = ConfigurationKey.all.compactMap(\.fileKey)
        #expect(Set(fileKeys).count == fileKeys.count)
        let guide = try String(contentsOf: HeraldBinary.repository.appendingPathComponent("docs/operators.md"), encoding: .utf8)
        let table = ConfigurationKey.markdownTable
        #expect(guide.contains(table), """
            docs/operators.md's "Configuration" table differs from the keys the code knows; replace it with:
            \(table)
            """)
    }
}
