import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The checkout the documents are read from, and the built `herald`
/// executable they are held against: `HERALD_BIN`, else `.build/debug/herald`
/// of this checkout (what `swift build` / `swift test` make). The fault
/// suite's harness (FaultTests' `Child.swift`) finds it the same way; these
/// tests only ask it for its help, so one short-lived process at a time is
/// all they need of it.
enum HeraldBinary {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Missing: Error, CustomStringConvertible {
        var path: String
        var description: String { "no herald executable at \(path): build it with swift build, or set HERALD_BIN" }
    }

    struct Timeout: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out: \(what)" }
    }

    static func path() throws -> String {
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

    /// The environment of the child, without any of Herald's settings.
    static func bareEnvironment() -> [String: String] {
        ProcessInfo.processInfo.environment.filter { name, _ in
            !(name.hasPrefix("HERALD_") || name.hasPrefix("APNS_") || name.hasPrefix("DATABASE_") || name == "LOG_LEVEL")
        }
    }

    /// Runs `herald arguments` in the checkout and returns its exit status (or
    /// 128 + signal) and what it wrote to standard output and standard error
    /// (through a file, so a long help text never fills a pipe); killed after `limit`.
    static func run(_ arguments: [String], environment: [String: String], limit: Duration) async throws -> (status: Int32, text: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("herald-docs-\(UUID().uuidString.prefix(8)).log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path())
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        process.currentDirectoryURL = repository
        try process.run()
        try? handle.close()
        func text() -> String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
        let clock = ContinuousClock()
        let end = clock.now + limit
        while process.isRunning {
            if clock.now > end {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw Timeout(what: "herald \(arguments.joined(separator: " ")) did not exit within \(limit)\n\(text().suffix(2_000))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.waitUntilExit()
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return (status, text())
    }
}
