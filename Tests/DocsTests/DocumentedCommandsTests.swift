import Foundation
import Testing
import TestSupport

/// Every `herald …` command the guides tell a reader to type exists in the
/// built executable, with every option they give it. (That the operator's
/// `herald apps` commands do what docs/operators.md says, against a database,
/// is FaultTests' `AppsCommandTests`.)
@Suite("documented commands")
struct DocumentedCommandsTests {
    @Test func everyDocumentedCommandAndOptionIsInTheBinary() async throws {
        let documented = try DocumentedCommands.all()
        // The reader's own check: the parser saw the commands it must see,
        // including the later parts of the README's `herald apps list` / `add …` row.
        #expect(documented.commands.contains { $0.words == ["apps", "list"] && $0.source.hasPrefix("README.md") })
        #expect(documented.commands.contains { $0.continues != nil && $0.words.first == "add" && $0.options.contains("--topic") })
        #expect(documented.commands.contains {
            $0.continues != nil && $0.words.first == "add-credential" && $0.options.contains("--p8") && $0.options.contains("--private-key")
        })
        #expect(documented.commands.contains { $0.continues != nil && $0.words.first == "retire-credential" })
        #expect(documented.commands.contains { $0.continues != nil && $0.words.first == "add-registration-key" })
        #expect(documented.commands.contains { $0.words == ["apps", "add-registration-key"] && $0.source.hasPrefix("docs/operators.md") })
        #expect(documented.commands.contains { $0.words == ["prune"] && $0.options.contains("--export") })
        #expect(documented.rowOptions.contains { $0.option == "--issue-client-cert" })

        let helps = HelpCache()
        var resolved: [[String]] = []
        var pathOf: [Int: [String]] = [:]
        // What a later part of a list follows: the path of the command it
        // continues, or (when that one is missing) its words as written.
        var listedAs: [Int: [String]] = [:]
        for (index, command) in documented.commands.enumerated() {
            var words = command.words
            if let previous = command.continues, let parent = listedAs[previous] {
                words = Array(parent.dropLast()) + words
            }
            let path = try await helps.resolve(words)
            pathOf[index] = path
            resolved.append(path)
            let help = try await helps.help(path)
            listedAs[index] = help.names(path) ? path : words
            guard help.names(path) else {
                Issue.record("""
                    \(command): `\(help.invocation)` exits \(help.status) and its usage line \
                    (\(help.usage ?? "none")) does not name `\(DocumentedCommands.spelled(path))`
                    \(help.text.split(separator: "\n").prefix(6).joined(separator: "\n"))
                    """)
                continue
            }
            for option in command.options where !help.options.contains(option) {
                Issue.record("\(command): `\(help.invocation)` lists no \(option) (it has \(help.options.sorted().joined(separator: " ")))")
            }
        }
        // An option named in another cell of a README command's row belongs to one of the row's commands.
        for row in documented.rowOptions {
            var found = false
            for index in row.commands {
                guard let path = pathOf[index] else { continue }
                if try await helps.help(path).options.contains(row.option) { found = true }
            }
            #expect(found, "\(row.source): \(row.option) is in none of the row's commands: \(row.commands.compactMap { pathOf[$0].map(DocumentedCommands.spelled) })")
        }

        // What the man pages (generate-manual reads --experimental-dump-help) and the
        // shell completions are made from names every documented command.
        let dump = try await helps.run(["--experimental-dump-help"])
        #expect(dump.status == 0, "\(dump.text.prefix(300))")
        let tree = try JSONSerialization.jsonObject(with: Data(dump.text.utf8)) as? [String: Any]
        let root = try #require(tree?["command"] as? [String: Any], "no command in the dump: \(dump.text.prefix(300))")
        let bash = try await helps.run(["--generate-completion-script", "bash"])
        #expect(bash.status == 0)
        for path in Set(resolved.filter { !$0.isEmpty }.map { $0.joined(separator: " ") }).sorted() {
            let words = path.split(separator: " ").map(String.init)
            var node: [String: Any]? = root
            for word in words {
                node = (node?["subcommands"] as? [[String: Any]])?.first { $0["commandName"] as? String == word }
            }
            #expect(node != nil, "the man pages' command tree (herald --experimental-dump-help) lacks `herald \(path)`")
            let function = "_herald_" + words.joined(separator: "_") + "()"
            #expect(bash.text.contains(function), "the bash completion script lacks `herald \(path)` (\(function))")
        }
    }
}

/// The `herald` commands of README.md, docs/*.md and Jobs/README.md: in code
/// spans and fenced blocks, with the options each names.
enum DocumentedCommands {
    struct Command: CustomStringConvertible {
        /// Where: `docs/operators.md:251`.
        var source: String
        var text: String
        /// The lowercase words after `herald` before the first option or
        /// other token: the subcommand path, perhaps followed by arguments
        /// (`apps add shop`); the binary's help says where the path ends.
        var words: [String]
        var options: [String]
        /// In a list such as `herald apps list` / `add NAME --topic T`: the
        /// command this one continues; its words follow that one's parent.
        var continues: Int?
        var description: String { "\(source): `\(text)`" }
    }

    /// An option named in a later cell of a table row whose first cell
    /// holds commands (README's Commands table): one of them takes it.
    struct RowOption {
        var source: String
        var option: String
        var commands: [Int]
    }

    struct Found {
        var commands: [Command] = []
        var rowOptions: [RowOption] = []
    }

    static var files: [String] {
        let docs = (try? FileManager.default.contentsOfDirectory(
            atPath: HeraldBinary.repository.appendingPathComponent("docs").path)) ?? []
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" } + ["Jobs/README.md"]
    }

    static func all() throws -> Found {
        var found = Found()
        for file in files {
            let text = try String(contentsOf: HeraldBinary.repository.appendingPathComponent(file), encoding: .utf8)
            extract(text, file: file, into: &found)
        }
        return found
    }

    static func spelled(_ path: [String]) -> String { (["herald"] + path).joined(separator: " ") }

    static func extract(_ markdown: String, file: String, into found: inout Found) {
        let lines = markdown.components(separatedBy: "\n")
        var fence: String?
        var paragraph: [(line: Int, text: String)] = []
        func flush() {
            if !paragraph.isEmpty { spans(paragraph, file: file, row: false, into: &found) }
            paragraph = []
        }
        var i = 0
        while i < lines.count {
            let trimmed = lines[i].trimmingCharacters(in: .whitespaces)
            if let open = fence {
                if trimmed.hasPrefix(open) {
                    fence = nil
                } else {
                    // A shell line, perhaps continued by final backslashes.
                    let start = i + 1
                    var logical = lines[i]
                    while logical.hasSuffix("\\"), i + 1 < lines.count {
                        logical.removeLast()
                        i += 1
                        logical += " " + lines[i]
                    }
                    for invocation in invocations(in: logical) {
                        found.commands.append(Command(source: "\(file):\(start)", text: invocation.text,
                                                      words: invocation.words, options: invocation.options))
                    }
                }
            } else if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                flush()
                fence = String(trimmed.prefix(3))
            } else if trimmed.isEmpty {
                flush()
            } else if trimmed.hasPrefix("|") {
                flush()
                spans([(i + 1, lines[i])], file: file, row: true, into: &found)
            } else {
                paragraph.append((i + 1, lines[i]))
            }
            i += 1
        }
        flush()
    }

    /// The code spans of a paragraph (its lines joined) or of a table row.
    static func spans(_ lines: [(line: Int, text: String)], file: String, row: Bool, into found: inout Found) {
        var chars: [Character] = []
        var lineStarts: [(offset: Int, line: Int)] = []
        for (number, text) in lines {
            lineStarts.append((chars.count, number))
            chars += Array(text) + [" "]
        }
        func line(at offset: Int) -> Int { lineStarts.last { $0.offset <= offset }?.line ?? lines[0].line }
        // Table cells: where each starts (unescaped pipes outside code spans).
        var cellStarts: [Int] = []
        var previous: (end: Int, index: Int)?
        var rowCommands: [Int] = []
        var laterOptions: [(offset: Int, option: String)] = []
        var k = 0
        var inCell = 0
        while k < chars.count {
            if chars[k] == "\\" { k += 2; continue }
            if chars[k] == "|" { cellStarts.append(k); inCell += 1; k += 1; continue }
            guard chars[k] == "`" else { k += 1; continue }
            var n = 0
            while k + n < chars.count, chars[k + n] == "`" { n += 1 }
            var j = k + n
            var close: Int?
            while j < chars.count {
                if chars[j] == "`" {
                    var m = 0
                    while j + m < chars.count, chars[j + m] == "`" { m += 1 }
                    if m == n { close = j; break }
                    j += m
                } else {
                    j += 1
                }
            }
            guard let close else { k += n; continue }
            let content = String(chars[(k + n)..<close]).trimmingCharacters(in: .whitespaces)
            let source = "\(file):\(line(at: k))"
            let found0 = found.commands.count
            let here = invocations(in: content)
            if !here.isEmpty {
                for invocation in here {
                    found.commands.append(Command(source: source, text: invocation.text,
                                                  words: invocation.words, options: invocation.options))
                }
            } else if let last = previous,
                      String(chars[last.end..<k]).trimmingCharacters(in: .whitespaces) == "/",
                      let first = content.split(separator: " ").first, isWord(first) {
                // `herald apps list` / `add NAME --topic T`: a later part of the same list.
                let parsed = tokens(content)
                found.commands.append(Command(source: source, text: content, words: parsed.words,
                                              options: parsed.options, continues: last.index))
            } else if row, inCell >= 2, content.hasPrefix("--") {
                laterOptions.append((k, String(tokens(content).options.first ?? "")))
            }
            if found.commands.count > found0 {
                previous = (close + n, found.commands.count - 1)
                if row, inCell <= 1 { rowCommands += Array(found0..<found.commands.count) }
            } else {
                previous = nil
            }
            k = close + n
        }
        if row, !rowCommands.isEmpty {
            for (offset, option) in laterOptions where !option.isEmpty {
                found.rowOptions.append(RowOption(source: "\(file):\(line(at: offset))", option: option, commands: rowCommands))
            }
        }
    }

    /// `herald` where a shell would run it: at the start, after a space or
    /// `(` or `=`, as a path ending in `bin/`, `debug/` or `release/`, or as
    /// an image (`localhost/herald:1.0.0`).
    static let invocation = try! NSRegularExpression(
        pattern: #"(?:^|(?<=[\s(="']))(?:[\w.-]*/)*?(?:(?:bin|debug|release)/|localhost/)?herald(?::[A-Za-z0-9._-]+)?(?=\s|$)"#)

    static func invocations(in text: String) -> [(text: String, words: [String], options: [String])] {
        let ns = text as NSString
        let matches = invocation.matches(in: text, range: NSRange(location: 0, length: ns.length)).filter { match in
            // A path such as /backup/herald is not the command: only the prefixes above.
            let found = ns.substring(with: match.range)
            return found == "herald" || found.hasPrefix("herald:") || found.hasSuffix("bin/herald")
                || found.hasSuffix("debug/herald") || found.hasSuffix("release/herald") || found.hasPrefix("localhost/herald:")
        }
        var out: [(String, [String], [String])] = []
        for (i, match) in matches.enumerated() {
            let end = i + 1 < matches.count ? matches[i + 1].range.location : ns.length
            let rest = ns.substring(with: NSRange(location: match.range.upperBound, length: end - match.range.upperBound))
            let parsed = tokens(rest)
            if parsed.words.isEmpty && parsed.options.isEmpty { continue }
            let shown = ("herald" + rest.prefix(parsed.consumed)).trimmingCharacters(in: .whitespaces)
            out.append((shown, parsed.words, parsed.options))
        }
        return out
    }

    static func isWord<S: StringProtocol>(_ token: S) -> Bool {
        guard let first = token.first, first.isASCII, first.isLowercase else { return false }
        return token.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" }
    }

    static let stops: Set<String> = ["&", "&&", "|", "||", ";", "│", ">", ">>", "2>", "2>&1"]

    /// The leading words and then the options of one command's text, up to
    /// the end of the command (a shell operator, a comment, a closing `)`).
    static func tokens(_ text: String) -> (words: [String], options: [String], consumed: Int) {
        var words: [String] = []
        var options: [String] = []
        var leading = true
        var depth = 0
        var consumed = 0
        var cursor = text.startIndex
        for token in text.split(whereSeparator: { $0 == " " || $0 == "\t" }) {
            if stops.contains(String(token)) || token.hasPrefix("#") || token.hasPrefix("│") { break }
            if token.hasPrefix(">") { break }
            if let range = text.range(of: token, range: cursor..<text.endIndex) {
                cursor = range.upperBound
                consumed = text.distance(from: text.startIndex, to: range.upperBound)
            }
            if leading, isWord(token) { words.append(String(token)); continue }
            leading = false
            let bare = token.drop { $0 == "[" || $0 == "(" }
            if bare.hasPrefix("--"), let first = bare.dropFirst(2).first, first.isLetter {
                options.append("--" + bare.dropFirst(2).prefix { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") })
            }
            depth += token.filter { $0 == "(" }.count - token.filter { $0 == ")" }.count
            if depth < 0 || token.hasSuffix(";") { break }
        }
        return (words, options, consumed)
    }
}

/// `herald … --help` of the built executable, each path asked once.
final class HelpCache {
    struct Help {
        var invocation: String
        var status: Int32
        var text: String
        var usage: String?
        var subcommands: [String]
        var options: Set<String>

        /// Exit 0 and a usage line that starts with the whole path (argument-parser
        /// answers an unknown subcommand with its parent's help in some cases).
        func names(_ path: [String]) -> Bool {
            guard status == 0, let usage else { return false }
            let expected = DocumentedCommands.spelled(path)
            return usage == expected || usage.hasPrefix(expected + " ")
        }
    }

    private var cache: [[String]: Help] = [:]

    func run(_ arguments: [String]) async throws -> (status: Int32, text: String) {
        try await HeraldBinary.run(arguments, environment: HeraldBinary.bareEnvironment(), limit: .seconds(30))
    }

    func help(_ path: [String]) async throws -> Help {
        if let known = cache[path] { return known }
        let (status, text) = try await run(path + ["--help"])
        let lines = text.components(separatedBy: "\n")
        let usage = lines.first { $0.hasPrefix("USAGE:") }.map { $0.dropFirst("USAGE:".count).trimmingCharacters(in: .whitespaces) }
        var subcommands: [String] = []
        if let start = lines.firstIndex(of: "SUBCOMMANDS:") {
            for line in lines[(start + 1)...] {
                if line.trimmingCharacters(in: .whitespaces).isEmpty { break }
                if line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first {
                    subcommands.append(String(name))
                }
            }
        }
        var options = Set<String>()
        let name = try NSRegularExpression(pattern: #"--[a-z0-9][a-z0-9-]*"#)
        for line in lines {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("-") else { continue }
            // The synopsis column: up to the first two spaces.
            let synopsis = trimmed.components(separatedBy: "  ").first ?? trimmed
            let ns = synopsis as NSString
            for match in name.matches(in: synopsis, range: NSRange(location: 0, length: ns.length)) {
                options.insert(ns.substring(with: match.range))
            }
        }
        let help = Help(invocation: DocumentedCommands.spelled(path + ["--help"]), status: status, text: text,
                        usage: usage, subcommands: subcommands, options: options)
        cache[path] = help
        return help
    }

    /// The subcommand path of `words`: while the command so far has
    /// subcommands, the next word is one (a documented word that is not
    /// shows as a path whose help does not name it).
    func resolve(_ words: [String]) async throws -> [String] {
        var path: [String] = []
        for word in words {
            let help = try await help(path)
            guard help.names(path), !help.subcommands.isEmpty else { break }
            path.append(word)
        }
        return path
    }
}
