import Foundation
import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes each log record as one JSON object on one line:
/// `{"ts":"2026-11-23T05:00:00.123Z","level":"info","label":"herald","msg":"…","run":"12","campaign":"3"}`.
/// Metadata keys become fields of their own (nested metadata as JSON
/// objects and arrays); values under keys that name a secret are replaced by
/// `"[redacted]"` as a second line of defence.
///
/// Hand-written: swift-log ships only a text handler, and no JSON handler is
/// among the packages this project may depend on. It is a small formatter
/// over swift-log's `LogHandler`, nothing more.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let sink: LineWriter

    public init(label: String, sink: LineWriter = .standardError, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.sink = sink
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Keys whose values are never written as they are.
    static let secretKeys: Set<String> = [
        "authorization", "password", "secret", "token", "reply_secret", "private_key", "jwt", "key", "p8",
    ]

    public func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let extra = event.metadata { fields.merge(extra) { _, new in new } }

        var out = "{\"ts\":"
        JSONText.appendString(Self.timestamp(), to: &out)
        out += ",\"level\":"
        JSONText.appendString(event.level.rawValue, to: &out)
        out += ",\"label\":"
        JSONText.appendString(label, to: &out)
        out += ",\"msg\":"
        JSONText.appendString(event.message.description, to: &out)
        for key in fields.keys.sorted() where !["ts", "level", "label", "msg"].contains(key) {
            out += ","
            JSONText.appendString(key, to: &out)
            out += ":"
            if Self.secretKeys.contains(key.lowercased()) {
                out += "\"[redacted]\""
            } else if let value = fields[key] {
                Self.append(value, to: &out)
            }
        }
        if let error = event.error {
            out += ",\"error\":"
            JSONText.appendString(String(describing: error), to: &out)
        }
        if event.level >= .warning {
            out += ",\"source\":"
            JSONText.appendString("\(event.source) \(event.file):\(event.line)", to: &out)
        }
        out += "}\n"
        sink.write(out)
    }

    static func append(_ value: Logger.Metadata.Value, to out: inout String) {
        switch value {
        case .string(let s): JSONText.appendString(s, to: &out)
        case .stringConvertible(let c): JSONText.appendString(c.description, to: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                append(item, to: &out)
            }
            out += "]"
        case .dictionary(let dict):
            out += "{"
            for (i, key) in dict.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                JSONText.appendString(key, to: &out)
                out += ":"
                if secretKeys.contains(key.lowercased()) {
                    out += "\"[redacted]\""
                } else if let v = dict[key] {
                    append(v, to: &out)
                }
            }
            out += "}"
        }
    }

    /// RFC 3339 in UTC with milliseconds.
    static func timestamp(_ date: Date = Date()) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        let millis = Int((date.timeIntervalSince1970 - Double(seconds)) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                      Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
    }
}

/// JSON string escaping (RFC 8259): quotes, backslashes and control characters.
enum JSONText {
    static func appendString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
