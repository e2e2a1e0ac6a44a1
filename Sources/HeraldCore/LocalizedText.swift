import Foundation

/// The text a device shows, in one locale. Each part is literal text, or a
/// key of the app's own Localizable.strings with its arguments
/// (`title-loc-key`/`title-loc-args`, `subtitle-loc-key`/…, `loc-key`/`loc-args`).
public struct LocalizedText: Sendable, Hashable {
    public enum Part: Sendable, Hashable {
        case text(String)
        case key(String, args: [String])
    }

    public var title: Part
    public var subtitle: Part?
    public var body: Part

    public init(title: String, subtitle: String? = nil, body: String) {
        self.title = .text(title)
        self.subtitle = subtitle.map { .text($0) }
        self.body = .text(body)
    }

    public init(title: Part, subtitle: Part? = nil, body: Part) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
    }

    /// Reads one entry of a campaign's `content`; the error names the problem.
    public init(json entry: JSONValue) throws(CampaignProblem) {
        if let problem = Self.problem(entry) { throw CampaignProblem(problem) }
        guard case .object(let fields) = entry else { throw CampaignProblem(Self.notAnObject) }
        func part(_ i: Int) -> Part? {
            if let text = fields[Self.parts[i]]?.stringValue { return .text(text) }
            guard let key = fields[Self.keys[i]]?.stringValue else { return nil }
            let args = fields[Self.args[i]]?.arrayValue?.compactMap(\.stringValue) ?? []
            return .key(key, args: args)
        }
        guard let title = part(0), let body = part(2) else { throw CampaignProblem(Self.needsTitleAndBody) }
        self.init(title: title, subtitle: part(1), body: body)
    }

    static let parts = ["title", "subtitle", "body"]
    static let keys = ["title-loc-key", "subtitle-loc-key", "loc-key"]
    static let args = ["title-loc-args", "subtitle-loc-args", "loc-args"]
    static let notAnObject = "must be an object with \"title\" and \"body\" (or \"title-loc-key\" and \"loc-key\")"
    static let needsTitleAndBody = "needs a text \"title\" and \"body\" (or \"title-loc-key\" and \"loc-key\")"

    /// What is wrong with one entry of a campaign's `content`, in the words
    /// and order of `herald_campaign_content_problem`, which
    /// checks each campaign when it is written; nil when nothing is. A
    /// golden table of entries holds the two to the same answers (StoreTests).
    public static func problem(_ entry: JSONValue) -> String? {
        guard case .object(let fields) = entry else { return notAnObject }
        // jsonb's own key order (shorter first, then bytewise): the first unknown key SQL meets.
        let known = Set(parts + keys + args)
        let order = fields.keys.sorted { a, b in
            a.utf8.count != b.utf8.count ? a.utf8.count < b.utf8.count : a.utf8.lexicographicallyPrecedes(b.utf8)
        }
        if let unknown = order.first(where: { !known.contains($0) }) {
            return "has \"\(unknown)\"; use title, subtitle, body, title-loc-key, subtitle-loc-key, loc-key, title-loc-args, subtitle-loc-args or loc-args"
        }
        for i in 0..<3 {
            let (part, key, arg) = (parts[i], keys[i], args[i])
            if let value = fields[part], value.stringValue == nil { return "\"\(part)\" must be text" }
            if let value = fields[key], (value.stringValue ?? "").isEmpty {
                return "\"\(key)\" must be a non-empty text (a key of the app's Localizable.strings)"
            }
            if fields[part] != nil, fields[key] != nil { return "give \"\(part)\" or \"\(key)\", not both" }
            if let value = fields[arg] {
                guard fields[key] != nil else { return "\"\(arg)\" needs \"\(key)\"" }
                guard let items = value.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
                    return "\"\(arg)\" must be a list of texts"
                }
            }
        }
        if (fields["title"] == nil && fields["title-loc-key"] == nil) || (fields["body"] == nil && fields["loc-key"] == nil) {
            return needsTitleAndBody
        }
        return nil
    }
}
