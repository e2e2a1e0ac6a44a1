import Foundation
import Logging
import PostgresNIO

/// Splits a SQL file into statements, the way psql does: semicolons end
/// statements except inside quotes, dollar-quoted bodies and comments.
/// (The extended query protocol takes one statement at a time.)
public enum SQLScript {
    public static func statements(in text: String) -> [String] {
        let s = Array(text.utf8)
        var out: [String] = []
        var start = 0
        var i = 0
        var hasCode = false
        let n = s.count

        func flush(_ end: Int) {
            if hasCode {
                let stmt = String(decoding: s[start..<end], as: UTF8.self)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
                if !stmt.isEmpty { out.append(stmt) }
            }
            hasCode = false
        }

        while i < n {
            let c = s[i]
            switch c {
            case UInt8(ascii: "-") where i + 1 < n && s[i + 1] == UInt8(ascii: "-"):
                while i < n && s[i] != UInt8(ascii: "\n") { i += 1 }
            case UInt8(ascii: "/") where i + 1 < n && s[i + 1] == UInt8(ascii: "*"):
                var depth = 1
                i += 2
                while i < n && depth > 0 {
                    if s[i] == UInt8(ascii: "/") && i + 1 < n && s[i + 1] == UInt8(ascii: "*") { depth += 1; i += 2 }
                    else if s[i] == UInt8(ascii: "*") && i + 1 < n && s[i + 1] == UInt8(ascii: "/") { depth -= 1; i += 2 }
                    else { i += 1 }
                }
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                hasCode = true
                i += 1
                while i < n {
                    if s[i] == c {
                        if i + 1 < n && s[i + 1] == c { i += 2; continue }
                        break
                    }
                    i += 1
                }
                i += 1
            case UInt8(ascii: "$"):
                hasCode = true
                // $tag$ … $tag$ where tag is empty or an identifier.
                var j = i + 1
                while j < n && (s[j] == UInt8(ascii: "_") || (s[j] >= 0x41 && s[j] <= 0x5A) || (s[j] >= 0x61 && s[j] <= 0x7A)
                                || (j > i + 1 && s[j] >= 0x30 && s[j] <= 0x39)) { j += 1 }
                if j < n && s[j] == UInt8(ascii: "$") {
                    let tag = Array(s[i...j])
                    var k = j + 1
                    while k + tag.count <= n && Array(s[k..<(k + tag.count)]) != tag { k += 1 }
                    i = min(n, k + tag.count)
                } else {
                    i += 1
                }
            case UInt8(ascii: ";"):
                flush(i)
                i += 1
                start = i
            default:
                if !(c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09) { hasCode = true }
                i += 1
            }
        }
        flush(n)
        return out
    }
}

extension SQLScript {
    /// Runs every statement of a SQL file in one transaction.
    public static func run(file: URL, on client: Database, logger: Logger) async throws {
        try await run(file.lastPathComponent, in: .directory(file.deletingLastPathComponent()), on: client, logger: logger)
    }

    /// Runs every statement of one of the SQL files in one transaction.
    public static func run(_ name: String, in files: SQLFiles, on client: Database, logger: Logger) async throws {
        let statements = statements(in: try files.text(name))
        do {
            try await client.withTransaction(logger: logger) { conn in
                for statement in statements {
                    try await conn.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
        } catch {
            throw StoreError.database("\(name): \(ErrorText.describe(error))", underlying: error)
        }
    }
}
