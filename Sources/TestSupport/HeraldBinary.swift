import Foundation

/// The checkout the tests run in and its built `herald` executable: `HERALD_BIN`, else
/// `.build/debug/herald` of this checkout (what `swift build` / `swift test` make). The
/// fault suite runs it as child processes; the documents' tests ask it for its help.
public enum HeraldBinary {
    public static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public struct Missing: Error, CustomStringConvertible {
        public var path: String
        public var description: String { "no herald executable at \(path): build it with swift build, or set HERALD_BIN" }
    }

    public static func path() throws -> String {
        if let explicit = ProcessInfo.processInfo.environment["HERALD_BIN"], !explicit.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: explicit) else { throw Missing(path: explicit) }
            return explicit
        }
        for candidate in [".build/debug/herald", ".build/x86_64-unknown-linux-gnu/debug/herald",
                          ".build/aarch64-unknown-linux-gnu/debug/herald"] {
            let path = repository.appendingPathComponent(candidate).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw Missing(path: repository.appendingPathComponent(".build/debug/herald").path)
    }
}
