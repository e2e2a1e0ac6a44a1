import Foundation
import Testing
import TestSupport

/// The fault table of docs/operators.md ("The fault suite") names every
/// scenario of the fault suite, and names nothing else: a new scenario
/// fails here until the operators' guide says what it proves.
@Suite("The fault table")
struct FaultTableTests {
    static let repository = HeraldBinary.repository

    /// The `@Test` functions of `struct FaultSuite` and its extensions.
    static func scenarios() throws -> Set<String> {
        let folder = repository.appendingPathComponent("Tests/FaultTests")
        var names: Set<String> = []
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            let lines = text.split(separator: "\n")
            guard lines.contains(where: { $0.hasPrefix("extension FaultSuite") || $0.hasPrefix("struct FaultSuite") }) else { continue }
            var afterTest = false
            for line in lines {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("@Test") { afterTest = true }
                guard afterTest, let range = trimmed.range(of: #"func [A-Za-z0-9_]+"#, options: .regularExpression) else { continue }
                names.insert(String(trimmed[range].dropFirst(5)))
                afterTest = false
            }
        }
        return names
    }

    /// The test names the table gives (backquoted, in its `test` column).
    static func tableNames() throws -> Set<String> {
        let text = try String(contentsOf: repository.appendingPathComponent("docs/operators.md"), encoding: .utf8)
        guard let start = text.range(of: "<!-- fault table: held to Tests/FaultTests by FaultTableTests -->"),
              let end = text.range(of: "<!-- end of the fault table -->", range: start.upperBound..<text.endIndex) else {
            Issue.record("docs/operators.md has no fault table between its markers")
            return []
        }
        var names: Set<String> = []
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("|") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 2 else { continue }
            for match in cells[2].matches(of: /`([A-Za-z0-9_]+)`/) { names.insert(String(match.1)) }
        }
        return names
    }

    @Test func everyScenarioOfTheFaultSuiteIsInTheTableAndNothingElse() throws {
        let scenarios = try Self.scenarios()
        let table = try Self.tableNames()
        #expect(scenarios.count >= 20, "\(scenarios.sorted())")
        #expect(scenarios.subtracting(table).sorted() == [], "scenarios the fault table of docs/operators.md does not name")
        #expect(table.subtracting(scenarios).sorted() == [], "names in the fault table that are no scenario of the fault suite")
    }
}
