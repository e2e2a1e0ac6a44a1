/// A strict reader of Prometheus's text exposition format (0.0.4), for tests
/// that check what `/metrics` and the run's textfile say.
public enum PrometheusExposition {
    public struct ParseError: Error, CustomStringConvertible {
        public let line: Int
        public let problem: String
        public var description: String { "line \(line): \(problem)" }
    }

    /// Every sample, keyed by its name and label block as written
    /// (`name{a="1"}`, or `name` without labels).
    public static func parse(_ text: String) throws -> [String: Double] {
        var samples: [String: Double] = [:]
        var typed: [String: String] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            let line = String(raw)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3).map(String.init)
                if parts.count >= 2, parts[1] == "TYPE" {
                    guard parts.count == 4, isMetricName(parts[2]),
                          ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                        throw ParseError(line: lineNumber, problem: "bad TYPE line: \(line)")
                    }
                    guard typed[parts[2]] == nil else {
                        throw ParseError(line: lineNumber, problem: "second TYPE line for \(parts[2])")
                    }
                    typed[parts[2]] = parts[3]
                } else if parts.count >= 2, parts[1] == "HELP" {
                    guard parts.count >= 3, isMetricName(parts[2]) else {
                        throw ParseError(line: lineNumber, problem: "bad HELP line: \(line)")
                    }
                }
                continue
            }
            var rest = Substring(line)
            let name = String(rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" })
            guard isMetricName(name) else { throw ParseError(line: lineNumber, problem: "bad metric name in \(line)") }
            rest = rest.dropFirst(name.count)
            var key = name
            if rest.first == "{" {
                guard let labels = labelBlock(&rest) else {
                    throw ParseError(line: lineNumber, problem: "bad label block in \(line)")
                }
                key += labels
            }
            guard rest.first == " " else { throw ParseError(line: lineNumber, problem: "no value in \(line)") }
            let fields = rest.dropFirst().split(separator: " ")
            guard (1...2).contains(fields.count), let value = Self.number(String(fields[0])) else {
                throw ParseError(line: lineNumber, problem: "bad value in \(line)")
            }
            if fields.count == 2, Int64(fields[1]) == nil {
                throw ParseError(line: lineNumber, problem: "bad timestamp in \(line)")
            }
            guard samples[key] == nil else { throw ParseError(line: lineNumber, problem: "sample \(key) twice") }
            samples[key] = value
        }
        return samples
    }

    static func isMetricName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return s.unicodeScalars.allSatisfy { CharacterSetLike.word($0) || $0 == ":" }
    }

    /// `{name="value",…}` with `\\`, `\"` and `\n` escapes; consumed from `rest`.
    static func labelBlock(_ rest: inout Substring) -> String? {
        var block = "{"
        rest = rest.dropFirst()
        while let next = rest.first, next != "}" {
            let labelName = String(rest.prefix { $0 != "=" })
            guard let first = labelName.unicodeScalars.first, !("0"..."9").contains(first),
                  labelName.unicodeScalars.allSatisfy(CharacterSetLike.word) else { return nil }
            rest = rest.dropFirst(labelName.count)
            guard rest.hasPrefix("=\"") else { return nil }
            rest = rest.dropFirst(2)
            var value = ""
            var closed = false
            while let ch = rest.first {
                rest = rest.dropFirst()
                if ch == "\\" {
                    guard let next = rest.first, ["\\", "\"", "n"].contains(next) else { return nil }
                    value += "\\" + String(next)
                    rest = rest.dropFirst()
                } else if ch == "\"" {
                    closed = true
                    break
                } else if ch == "\n" {
                    return nil
                } else {
                    value.append(ch)
                }
            }
            guard closed else { return nil }
            block += (block.count > 1 ? "," : "") + "\(labelName)=\"\(value)\""
            if rest.first == "," { rest = rest.dropFirst() }
        }
        guard rest.first == "}" else { return nil }
        rest = rest.dropFirst()
        return block + "}"
    }

    static func number(_ s: String) -> Double? {
        switch s {
        case "+Inf", "Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default: return Double(s)
        }
    }
}

enum CharacterSetLike {
    static func word(_ u: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(u) || ("A"..."Z").contains(u) || ("0"..."9").contains(u) || u == "_"
    }
}
