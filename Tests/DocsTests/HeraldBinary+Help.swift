import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What the documents' tests ask of the built `herald` (TestSupport's `HeraldBinary`): its
/// help, one short-lived process at a time.
extension HeraldBinary {
    struct Timeout: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out: \(what)" }
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
