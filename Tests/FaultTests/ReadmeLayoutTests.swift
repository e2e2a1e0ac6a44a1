import Foundation
import Testing

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
}
