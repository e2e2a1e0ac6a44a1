import Foundation
import Logging
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where log lines go: standard error, or a buffer in tests. Each line is
/// written with one call, so lines from several threads never interleave.
public final class LineWriter: Sendable {
    private let target: NIOLockedValueBox<[String]>?

    public static let standardError = LineWriter(target: nil)

    /// Keeps the lines in memory (tests).
    static func memory() -> LineWriter { LineWriter(target: NIOLockedValueBox([])) }

    private init(target: NIOLockedValueBox<[String]>?) {
        self.target = target
    }

    public func write(_ line: String) {
        if let target {
            target.withLockedValue { $0.append(line) }
        } else {
            writeToStandardError(line)
        }
    }

    /// What was written (memory writers only).
    var lines: [String] { target?.withLockedValue { $0 } ?? [] }
}

/// One `write(2)` for the whole line where the system allows it.
private func writeToStandardError(_ line: String) {
    var line = line
    line.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let n = write(STDERR_FILENO, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
            if n <= 0 { break }
            offset += n
        }
    }
}
