import Foundation
import Testing
import TestSupport

/// The README's "Layout" table names every folder of `Sources/` and
/// `Tests/`, every top-level entry and every script: a folder added or
/// renamed without its line fails here.
@Suite("README layout")
struct ReadmeLayoutTests {
    static let root = HeraldBinary.repository

    static func entries(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(path).path)
            .filter { !$0.hasPrefix(".") || $0 == ".ci" }.sorted()
    }

    @Test func theLayoutTableNamesEveryFolder() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n## Layout\n").dropFirst().first)
        let table = section.components(separatedBy: "\n## ").first ?? section
        var missing: [String] = []
        for folder in try Self.entries("Sources") where !table.contains("`Sources/\(folder)") { missing.append("Sources/\(folder)") }
        for folder in try Self.entries("Tests") where !table.contains("`Tests/\(folder)") && !table.contains("`\(folder)`") {
            missing.append("Tests/\(folder)")
        }
        // Not the README itself, nor what a build leaves (Package.resolved, .build).
        for entry in try Self.entries(".") where !["README.md", "Package.resolved"].contains(entry) && !table.contains("`\(entry)") {
            missing.append(entry)
        }
        for script in try Self.entries("scripts") where script != "lib" && !table.contains("`\(script)`") { missing.append("scripts/\(script)") }
        #expect(missing.isEmpty, "README.md's Layout table does not name: \(missing.joined(separator: ", "))")
    }

    /// Every test the README names as a guarantee's proof exists: a suite
    /// (`IntakeTests`, a test target's folder), a test of one (`FaultSuite.name`,
    /// declared in a file of that type), or a test by its name alone.
    @Test func theTestsTheGuaranteesNameExist() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        var files: [String] = []
        let tests = Self.root.appendingPathComponent("Tests")
        let walk = FileManager.default.enumerator(atPath: tests.path)
        while let path = walk?.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            files.append(try String(contentsOf: tests.appendingPathComponent(path), encoding: .utf8))
        }
        func declares(_ type: String, _ text: String) -> Bool {
            ["struct", "extension", "class", "enum"].contains { text.contains("\($0) \(type) ") || text.contains("\($0) \(type):") }
        }
        func hasTest(_ name: String, _ text: String) -> Bool { text.contains("func \(name)(") }
        let folders = Set(try Self.entries("Tests"))
        let named = try NSRegularExpression(pattern: "`([A-Z][A-Za-z]*(?:Tests|Suite))(?:\\.([a-z][A-Za-z]*))?`|`([a-z][A-Za-z]{24,})`")
        var missing: [String] = []
        let whole = NSRange(readme.startIndex..., in: readme)
        for match in named.matches(in: readme, range: whole) {
            func group(_ i: Int) -> String? { Range(match.range(at: i), in: readme).map { String(readme[$0]) } }
            if let type = group(1) {
                if let test = group(2) {
                    if !files.contains(where: { declares(type, $0) && hasTest(test, $0) }) { missing.append("\(type).\(test)") }
                } else if !folders.contains(type), !files.contains(where: { declares(type, $0) }) {
                    missing.append(type)
                }
            } else if let test = group(3), !files.contains(where: { hasTest(test, $0) }) {
                missing.append(test)
            }
        }
        #expect(missing.isEmpty, "README.md names tests that do not exist: \(missing.joined(separator: ", "))")
    }
}
