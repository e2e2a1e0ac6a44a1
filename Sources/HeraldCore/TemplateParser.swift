import Foundation

/// Reads `{{ … }}` outputs out of a text; everything else is kept as written.
struct TemplateParser {
    private let chars: [Character]
    private var i = 0
    private var line = 1
    private var column = 1

    init(_ source: String) {
        chars = Array(source)
    }

    mutating func parse() throws(TemplateError) -> [Template.Segment] {
        var segments: [Template.Segment] = []
        var text = ""
        while i < chars.count {
            if chars[i] == "{", i + 1 < chars.count, chars[i + 1] == "%" {
                throw fail("tags ({% … %}) are not supported; a template holds outputs ({{ … }}) only")
            }
            if chars[i] == "{", i + 1 < chars.count, chars[i + 1] == "{" {
                if !text.isEmpty { segments.append(.text(text)); text = "" }
                let open = (line, column)
                advance(2)
                segments.append(.output(try output(opened: open)))
            } else {
                text.append(chars[i])
                advance(1)
            }
        }
        if !text.isEmpty { segments.append(.text(text)) }
        return segments
    }

    private mutating func advance(_ n: Int) {
        for _ in 0..<n where i < chars.count {
            if chars[i] == "\n" { line += 1; column = 1 } else { column += 1 }
            i += 1
        }
    }

    private func fail(_ message: String) -> TemplateError {
        TemplateError(line: line, column: column, message: message)
    }

    private mutating func skipSpaces() {
        while i < chars.count, chars[i] == " " || chars[i] == "\t" || chars[i] == "\n" { advance(1) }
    }

    private func at(_ s: String) -> Bool {
        var j = i
        for c in s {
            guard j < chars.count, chars[j] == c else { return false }
            j += 1
        }
        return true
    }

    private mutating func output(opened: (Int, Int)) throws(TemplateError) -> Template.Output {
        if at("-") { throw fail("whitespace control ({{- … -}}) is not supported") }
        skipSpaces()
        guard i < chars.count else {
            throw TemplateError(line: opened.0, column: opened.1, message: "\"{{\" is never closed with \"}}\"")
        }
        let variable = try self.variable()
        var filters: [Template.Filter] = []
        while true {
            skipSpaces()
            if at("}}") { advance(2); break }
            if at("-}}") { throw fail("whitespace control ({{- … -}}) is not supported") }
            guard i < chars.count else {
                throw TemplateError(line: opened.0, column: opened.1, message: "\"{{\" is never closed with \"}}\"")
            }
            guard chars[i] == "|" else { throw fail("expected \"|\" or \"}}\" after \(variable), found \"\(chars[i])\"") }
            advance(1)
            skipSpaces()
            filters.append(try filter())
        }
        return Template.Output(variable: variable, filters: filters)
    }

    private mutating func name() -> String {
        var s = ""
        while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" || chars[i] == "-" {
            s.append(chars[i])
            advance(1)
        }
        return s
    }

    private mutating func variable() throws(TemplateError) -> Template.Variable {
        let start = (line, column)
        func fail(_ m: String) -> TemplateError { TemplateError(line: start.0, column: start.1, message: m) }
        var parts = [name()]
        while i < chars.count, chars[i] == "." {
            advance(1)
            let part = name()
            guard !part.isEmpty else { throw self.fail("expected a name after \".\"") }
            parts.append(part)
        }
        guard !parts[0].isEmpty else {
            throw fail("expected a variable such as user.first_name, found \(i < chars.count ? "\"\(chars[i])\"" : "the end")")
        }
        guard let root = Template.Variable.Root(rawValue: parts[0]) else {
            throw fail("unknown variable \"\(parts.joined(separator: "."))\": a variable starts with user., device., campaign. or recipient., or is code")
        }
        let path = Array(parts.dropFirst())
        let variable = Template.Variable(root: root, path: path)
        switch root {
        case .user, .recipient:
            guard !path.isEmpty else { throw fail("\"\(root.rawValue)\" needs a field, such as \(root == .user ? "user.first_name" : "recipient.points")") }
        case .device:
            guard path.count == 1, ["locale", "app_version", "time_zone"].contains(path[0]) else {
                throw fail("unknown variable \"\(variable)\": device has locale, app_version and time_zone")
            }
        case .campaign:
            guard path == ["name"] else { throw fail("unknown variable \"\(variable)\": campaign has name") }
        case .code:
            guard path.isEmpty else { throw fail("\"code\" is the user's code itself, with no field") }
        }
        return variable
    }

    private enum Argument {
        case text(String), number(Int)
    }

    private mutating func argument() throws(TemplateError) -> Argument {
        skipSpaces()
        guard i < chars.count else { throw fail("expected a value after \":\"") }
        let quote = chars[i]
        if quote == "\"" || quote == "'" {
            advance(1)
            var s = ""
            while i < chars.count, chars[i] != quote {
                s.append(chars[i])
                advance(1)
            }
            guard i < chars.count else { throw fail("a text in quotes is never closed") }
            advance(1)
            return .text(s)
        }
        var digits = ""
        while i < chars.count, chars[i].isASCII, chars[i].isNumber {
            digits.append(chars[i])
            advance(1)
        }
        guard let n = Int(digits) else { throw fail("expected a text in quotes or a whole number, found \"\(chars[i])\"") }
        return .number(n)
    }

    private mutating func filter() throws(TemplateError) -> Template.Filter {
        let start = (line, column)
        func fail(_ m: String) -> TemplateError { TemplateError(line: start.0, column: start.1, message: m) }
        let filterName = name()
        var args: [Argument] = []
        skipSpaces()
        if i < chars.count, chars[i] == ":" {
            advance(1)
            args.append(try argument())
            skipSpaces()
            while i < chars.count, chars[i] == "," {
                advance(1)
                args.append(try argument())
                skipSpaces()
            }
        }
        func text(_ a: Argument) -> String {
            switch a {
            case .text(let s): s
            case .number(let n): String(n)
            }
        }
        switch (filterName, args.count) {
        case ("default", 1): return .default(text(args[0]))
        case ("upcase", 0): return .upcase
        case ("downcase", 0): return .downcase
        case ("capitalize", 0): return .capitalize
        case ("number", 0): return .number
        case ("truncate", 1), ("truncate", 2):
            guard case .number(let n) = args[0] else { throw fail("truncate takes a length, such as truncate: 20") }
            return .truncate(n, ellipsis: args.count == 2 ? text(args[1]) : "...")
        case ("money", 1):
            let code = text(args[0])
            guard code.count == 3, code.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
                throw fail("money takes a currency code, such as money: \"EUR\"")
            }
            return .money(currency: code)
        case ("date", 1):
            guard let style = Template.DateStyle(rawValue: text(args[0])) else {
                throw fail("date takes \"short\", \"medium\", \"long\" or \"full\"")
            }
            return .date(style)
        case ("", _):
            throw fail("expected a filter name after \"|\"")
        case (let other, _) where Template.Filter.names.contains(other):
            throw fail("\(other) takes \(Self.arity[other] ?? "")")
        case (let other, _):
            throw fail("unknown filter \"\(other)\": use default, upcase, downcase, capitalize, truncate, number, money or date")
        }
    }

    static let arity = [
        "default": "one value, such as default: \"there\"", "upcase": "no value", "downcase": "no value",
        "capitalize": "no value", "number": "no value", "truncate": "a length and maybe an ellipsis, such as truncate: 20",
        "money": "a currency code, such as money: \"EUR\"", "date": "a style, such as date: \"short\"",
    ]
}
