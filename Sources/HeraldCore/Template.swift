import Foundation

/// A text with Liquid outputs (`{{ user.first_name | default: "there" }}`),
/// parsed once per campaign and rendered for each device (DESIGN, "Personal
/// text"; the subset is docs/marketers.md, "Text made for each person").
///
/// Hand-written: Stencil (the only library in reach that reads this syntax)
/// is far over a render's budget, and renders a missing variable as an empty text.
public struct Template: Sendable, Hashable {
    public enum Segment: Sendable, Hashable {
        case text(String)
        case output(Output)
    }

    /// `{{ variable | filter: arg | … }}`
    public struct Output: Sendable, Hashable {
        public var variable: Variable
        public var filters: [Filter]
    }

    /// What a template may name. The roots and the fields of `device` and
    /// `campaign` are fixed; `user.<key>` and `recipient.<key>` are free.
    public struct Variable: Sendable, Hashable, CustomStringConvertible {
        public enum Root: String, Sendable, CaseIterable {
            case user, device, campaign, recipient
            /// The code the user drew from the campaign's pool (no path).
            case code
        }

        public var root: Root
        public var path: [String]

        public init(root: Root, path: [String]) {
            self.root = root
            self.path = path
        }

        public var description: String { ([root.rawValue] + path).joined(separator: ".") }

        /// `{{ code }}`: the user's code from the campaign's pool.
        public static let code = Variable(root: .code, path: [])
    }

    public enum DateStyle: String, Sendable, Hashable, CaseIterable {
        case short, medium, long, full
    }

    public enum Filter: Sendable, Hashable {
        case `default`(String)
        case upcase, downcase, capitalize
        case truncate(Int, ellipsis: String)
        case number
        case money(currency: String)
        case date(DateStyle)

        static let names = ["default", "upcase", "downcase", "capitalize", "truncate", "number", "money", "date"]
    }

    public let segments: [Segment]

    /// Whether a text is read as a template: it holds `{{` or `{%`.
    public static func isTemplate(_ text: String) -> Bool {
        text.contains("{{") || text.contains("{%")
    }

    /// The variables its outputs name, in the order they first appear.
    public var variables: [Variable] {
        var seen: [Variable] = []
        for case .output(let o) in segments where !seen.contains(o.variable) { seen.append(o.variable) }
        return seen
    }

    /// The template's text without its outputs: the least it renders to.
    public var literalUTF8Count: Int {
        segments.reduce(0) { n, s in if case .text(let t) = s { n + t.utf8.count } else { n } }
    }

    public init(parsing source: String) throws(TemplateError) {
        var parser = TemplateParser(source)
        segments = try parser.parse()
    }

    /// The text for one device. `value(variable)` answers a variable's value
    /// as text (nil: it has none); `formats` formats numbers, money and dates
    /// for the device's locale and the user's time zone.
    public func render(value: (Variable) -> String?, formats: TemplateFormats) throws(TemplateMiss) -> String {
        var out = ""
        for segment in segments {
            switch segment {
            case .text(let t): out += t
            case .output(let o): out += try o.render(value(o.variable), formats: formats)
            }
        }
        return out
    }
}

extension Template.Output {
    /// Liquid's order: each filter takes the last one's result; `default`
    /// gives a value to nothing, false or an empty text. Nothing at the end
    /// is a miss: the device is skipped, never sent half a text.
    func render(_ start: String?, formats: TemplateFormats) throws(TemplateMiss) -> String {
        var value = start
        for filter in filters {
            switch filter {
            case .default(let fallback):
                if value == nil || value == "" || value == "false" { value = fallback }
            case .upcase: value = value?.uppercased()
            case .downcase: value = value?.lowercased()
            case .capitalize:
                value = value.map { v in v.first.map { String($0).uppercased() + v.dropFirst().lowercased() } ?? v }
            case .truncate(let length, let ellipsis):
                if let v = value, v.count > length {
                    value = String(v.prefix(max(0, length - ellipsis.count))) + ellipsis
                }
            case .number, .money, .date:
                guard let v = value else { continue }
                guard let formatted = formats.format(v, filter) else {
                    throw TemplateMiss(variable: variable, why: filter.refusal)
                }
                value = formatted
            }
        }
        guard let value else {
            throw TemplateMiss(variable: variable, why: variable.root == .code
                               ? "none left: the campaign's code pool is used up" : "has no value and no default")
        }
        return value
    }
}

extension Template.Filter {
    var refusal: String {
        switch self {
        case .number, .money: "is not a number (the \(name) filter)"
        case .date: "is not a date such as 2026-12-06 or 2026-12-06T18:00:00Z (the date filter)"
        default: "cannot be \(name)"
        }
    }

    var name: String {
        switch self {
        case .default: "default"
        case .upcase: "upcase"
        case .downcase: "downcase"
        case .capitalize: "capitalize"
        case .truncate: "truncate"
        case .number: "number"
        case .money: "money"
        case .date: "date"
        }
    }
}
