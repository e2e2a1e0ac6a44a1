import Foundation
import Logging
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How log lines are written.
public enum LogFormat: String, Sendable, CaseIterable {
    /// One JSON object a line, for a log collector.
    case json
    /// swift-log's human-readable lines, for a person at a terminal.
    case text

    /// JSON unless standard error is a terminal.
    public static func automatic(isTerminal: Bool = isatty(STDERR_FILENO) == 1) -> LogFormat {
        isTerminal ? .text : .json
    }

    /// `HERALD_LOG_FORMAT` (`json`, `text` or `auto`), else automatic.
    public static func from(environment: [String: String]) throws -> LogFormat {
        guard let text = environment["HERALD_LOG_FORMAT"], !text.isEmpty, text != "auto" else { return .automatic() }
        guard let format = LogFormat(rawValue: text) else {
            throw LogFormatError(value: text)
        }
        return format
    }
}
