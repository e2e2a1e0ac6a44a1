import Foundation
import Runner
import Testing

/// `run --dry-run --out FILE` writes its lines into FILE in place.
@Suite("Output files")
struct LineFileTests {
    func scratch() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-linefile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func aRegularFileIsTruncatedAndRewritten() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("out.jsonl").path
        try Data(String(repeating: "old line\n", count: 100).utf8).write(to: URL(fileURLWithPath: path))
        let file = try LineFile(path: path)
        try await file.write(Array("new\n".utf8))
        try await file.finish()
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new\n")
    }

    @Test func aLinkIsWrittenThroughNotReplaced() async throws {
        // Renaming a new file over the path would turn the link (or a device
        // such as /dev/null) into a regular file.
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = dir.appendingPathComponent("target").path
        let link = dir.appendingPathComponent("link").path
        try Data("x\n".utf8).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let file = try LineFile(path: link)
        try await file.write(Array("through the link\n".utf8))
        try await file.finish()
        let type = try FileManager.default.attributesOfItem(atPath: link)[.type] as? FileAttributeType
        #expect(type == .typeSymbolicLink)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "through the link\n")
    }

    @Test func aDirectoryIsRefusedWithItsName() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect {
            _ = try LineFile(path: dir.path)
        } throws: { error in
            "\(error)".contains(dir.path) && "\(error)".contains("directory")
        }
    }
}
