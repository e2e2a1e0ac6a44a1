import Crypto
import Foundation
import PostgresNIO
import Store
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

struct Timeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out: \(what)" }
}

/// A child process with its output in a file.
final class Child {
    let process = Process()
    let output: URL
    let name: String

    /// `user`: run as that uid and gid (through setpriv; the tests run as root).
    /// `wrapper`: a command that runs `herald` (e.g. unshare into a PID namespace).
    init(name: String, arguments: [String], environment: [String: String], directory scratch: Scratch,
         user: (uid: UInt32, gid: UInt32)? = nil, wrapper: [String] = []) throws {
        self.name = name
        output = scratch.directory.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(6)).log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        if let user {
            process.executableURL = URL(fileURLWithPath: Self.setpriv)
            process.arguments = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", "--",
                                 try HeraldBinary.path()] + arguments
        } else if let command = wrapper.first {
            process.executableURL = URL(fileURLWithPath: command)
            process.arguments = Array(wrapper.dropFirst()) + [try HeraldBinary.path()] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: try HeraldBinary.path())
            process.arguments = arguments
        }
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        process.currentDirectoryURL = HeraldBinary.repository
        try process.run()
        try? handle.close()
        scratch.children.append(self)
    }

    /// util-linux's setpriv, in every Debian system.
    static let setpriv = "/usr/bin/setpriv"

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    func signal(_ number: Int32) {
        if process.isRunning { kill(process.processIdentifier, number) }
    }

    /// The exit status (or 128 + signal), waiting at most `limit`.
    func wait(limit: Duration) async throws -> Int32 {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while process.isRunning {
            if clock.now > end {
                kill(process.processIdentifier, SIGKILL)
                throw Timeout(what: "\(name) did not exit within \(limit)\n\(tail())")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    func text() -> String {
        (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }

    func tail(_ lines: Int = 15) -> String {
        text().split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// What a process that trapped said of it: its last log lines before the
    /// crash report, the trap's message and the crashed thread's frames
    /// (the tail alone is the report's registers); the tail when it did not crash.
    func crashReport() -> String {
        let lines = text().split(separator: "\n", omittingEmptySubsequences: false)
        guard let at = lines.firstIndex(where: { $0.contains("Program crashed") || $0.contains("Fatal error") }) else { return tail() }
        return lines[max(0, at - 5)..<min(lines.count, at + 40)].joined(separator: "\n")
    }
}

/// One scenario's files and child processes.
final class Scratch {
    let directory: URL
    var children: [Child] = []

    init(directory: URL) {
        self.directory = directory
    }

    func appendingPathComponent(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Writes `text` to the file `name` of the scenario's folder with `mode` (a secret's 0600 unless
    /// told otherwise) and returns its path.
    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let path = appendingPathComponent(name).path
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
            throw Timeout(what: "cannot write \(path)")
        }
        return path
    }

    /// Whatever is still running when the scenario ends (it failed midway) is killed.
    func killChildren() async {
        for child in children where child.isRunning {
            child.signal(SIGCONT)
            child.signal(SIGKILL)
            _ = try? await child.wait(limit: .seconds(10))
        }
    }
}

/// A place for one scenario's files, removed afterwards, and its processes,
/// never left running.
func withScratch<T>(_ body: (Scratch) async throws -> T) async throws -> T {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-faults-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let scratch = Scratch(directory: dir)
    do {
        let result = try await body(scratch)
        await scratch.killChildren()
        try? FileManager.default.removeItem(at: dir)
        return result
    } catch {
        await scratch.killChildren()
        // Kept for a look: the logs of the processes are there.
        print("fault suite: files of the failed scenario kept in \(dir.path)")
        throw error
    }
}

/// Waits until `condition` holds, at most `limit`.
func waitUntil(_ what: String, limit: Duration, _ condition: () async throws -> Bool) async throws {
    let clock = ContinuousClock()
    let end = clock.now + limit
    while !(try await condition()) {
        if clock.now > end { throw Timeout(what: what) }
        try await Task.sleep(for: .milliseconds(50))
    }
}
