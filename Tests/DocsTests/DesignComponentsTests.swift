import Foundation
import Testing
import TestSupport

/// docs/DESIGN.md's "Components" section has one bullet per module
/// (`- **Name** — what it owns`), and the modules are the folders of
/// `Sources/`: a module named there that has no folder, or a folder added or
/// renamed without its bullet, fails here.
@Suite("DESIGN's components")
struct DesignComponentsTests {
    static let root = HeraldBinary.repository

    /// The folders of `Sources/`: one module each.
    static func modules() throws -> [String] {
        let sources = root.appendingPathComponent("Sources")
        return try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { name in
            var folder: ObjCBool = false
            return !name.hasPrefix(".")
                && FileManager.default.fileExists(atPath: sources.appendingPathComponent(name).path, isDirectory: &folder)
                && folder.boolValue
        }.sorted()
    }

    /// The names the section's bullets start with, in their order.
    static func named() throws -> [String] {
        let design = try String(contentsOf: root.appendingPathComponent("docs/DESIGN.md"), encoding: .utf8)
        let section = try #require(design.components(separatedBy: "\n## Components\n").dropFirst().first,
                                   "docs/DESIGN.md has no \"## Components\" section")
        let body = section.components(separatedBy: "\n## ").first ?? section
        var names: [String] = []
        for line in body.split(separator: "\n") where line.hasPrefix("- **") {
            let rest = line.dropFirst("- **".count)
            guard let end = rest.range(of: "**") else { continue }
            names.append(String(rest[..<end.lowerBound]))
        }
        return names
    }

    @Test func theComponentsSectionNamesEveryModuleAndNothingElse() throws {
        let modules = try Self.modules()
        let named = try Self.named()
        #expect(!modules.isEmpty && !named.isEmpty, "modules \(modules), named \(named)")
        let twice = Dictionary(grouping: named, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        #expect(twice.isEmpty, "docs/DESIGN.md's Components names these more than once: \(twice.joined(separator: ", "))")
        let missing = Set(modules).subtracting(named).sorted()
        #expect(missing.isEmpty, "docs/DESIGN.md's Components does not name these folders of Sources/: \(missing.joined(separator: ", "))")
        let gone = Set(named).subtracting(modules).sorted()
        #expect(gone.isEmpty, "docs/DESIGN.md's Components names modules with no folder in Sources/: \(gone.joined(separator: ", "))")
    }

    /// Each folder of `Sources/` is a target of Package.swift (by its name,
    /// or by its path where the target's name differs, as `herald-embed`'s).
    @Test func everyModuleIsATargetOfThePackage() throws {
        let package = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let untargeted = try Self.modules().filter {
            !package.contains("name: \"\($0)\"") && !package.contains("path: \"Sources/\($0)\"")
        }
        #expect(untargeted.isEmpty, "folders of Sources/ that no target of Package.swift builds: \(untargeted.joined(separator: ", "))")
    }
}
