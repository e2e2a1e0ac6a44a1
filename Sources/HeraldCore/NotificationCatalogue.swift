import Crypto
import Foundation

/// The categories and actions of the database, with every locale of their
/// labels: what `GET /v1/notification-config` renders per app and locale
/// (contract 5) and what a config refresh push (contract 7) announces.
public struct NotificationCatalogue: Sendable, Hashable {
    public struct Labels: Sendable, Hashable {
        public var title: String
        public var textButtonTitle: String?
        public var textPlaceholder: String?

        public init(title: String, textButtonTitle: String? = nil, textPlaceholder: String? = nil) {
            self.title = title
            self.textButtonTitle = textButtonTitle
            self.textPlaceholder = textPlaceholder
        }
    }

    public struct Action: Sendable, Hashable {
        public var id: String
        public var kind: String
        public var options: Int
        /// The plain columns: the labels in `defaultLocale`.
        public var defaultLocale: String
        public var labels: Labels
        /// Other locales' labels; a missing text-input label falls back to the default's.
        public var localized: [String: Labels]

        public init(id: String, kind: String = "button", options: Int, defaultLocale: String = "en",
                    labels: Labels, localized: [String: Labels] = [:]) {
            self.id = id
            self.kind = kind
            self.options = options
            self.defaultLocale = defaultLocale
            self.labels = labels
            self.localized = localized
        }

        /// The labels shown to a device in `locale`, with the fallback chain of campaign text.
        public func labels(for locale: String) -> Labels {
            let key = LocaleMatch.best(for: locale, among: Array(localized.keys) + [defaultLocale], default: defaultLocale)
            guard key != defaultLocale, let entry = localized[key] else { return labels }
            return Labels(title: entry.title,
                          textButtonTitle: labels.textButtonTitle.map { entry.textButtonTitle ?? $0 },
                          textPlaceholder: entry.textPlaceholder ?? labels.textPlaceholder)
        }
    }

    public struct Category: Sendable, Hashable {
        public var id: String
        public var options: Int
        /// Action ids in display order.
        public var actions: [String]
        /// The apps whose documents hold it (`categories.apps`); nil: every app's.
        public var apps: [String]?

        public init(id: String, options: Int, actions: [String], apps: [String]? = nil) {
            self.id = id
            self.options = options
            self.actions = actions
            self.apps = apps
        }

        /// Whether `app`'s documents hold it.
        public func belongs(to app: String) -> Bool {
            apps?.contains(app) ?? true
        }
    }

    /// One rendered document.
    public struct Document: Sendable, Hashable {
        public var body: [UInt8]
        /// A strong ETag, quoted: the same bytes always have the same ETag.
        public var etag: String
        /// Category id → hash of the category as this document shows it.
        public var categoryHashes: [String: String]
    }

    public var actions: [String: Action]
    public var categories: [String: Category]
    /// The deployment's apps (a document is asked for by one of them).
    public var apps: Set<String>

    public init(actions: [Action], categories: [Category], apps: Set<String> = []) {
        self.actions = Dictionary(actions.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        self.categories = Dictionary(categories.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        self.apps = apps
    }

    /// The document for a device or request of `app` in `locale`: the
    /// app's categories and the actions they list.
    public func document(for locale: String, app: String) -> Document {
        let held = categories.values.filter { $0.belongs(to: app) }
        var rendered: [String: NotificationConfig.Action] = [:]
        for id in Set(held.flatMap(\.actions)) {
            guard let a = actions[id] else { continue }
            let l = a.labels(for: locale)
            rendered[a.id] = NotificationConfig.Action(id: a.id, title: l.title, options: a.options,
                                                       textButtonTitle: l.textButtonTitle, textPlaceholder: l.textPlaceholder)
        }
        let cats = held.map { NotificationConfig.Category(id: $0.id, actions: $0.actions, options: $0.options) }
        let body = NotificationConfig.render(categories: cats, actions: Array(rendered.values))
        let etag = "\"" + Self.hex(SHA256.hash(data: body).prefix(12)) + "\""
        // Each category as this document shows it: its options, its actions in
        // order with their options and labels in this locale.
        var hashes: [String: String] = [:]
        for c in cats {
            var parts: [JSONValue] = [.string(c.id), .int(Int64(c.options))]
            for id in c.actions {
                guard let a = rendered[id] else {
                    parts.append(.string(id))
                    continue
                }
                parts.append(.array([.string(a.id), .int(Int64(a.options)), .string(a.title),
                                     a.textButtonTitle.map { .string($0) } ?? .null,
                                     a.textPlaceholder.map { .string($0) } ?? .null]))
            }
            var w = JSONWriter(capacity: 256)
            w.value(.array(parts))
            hashes[c.id] = Self.hex(SHA256.hash(data: w.bytes).prefix(12))
        }
        return Document(body: body, etag: etag, categoryHashes: hashes)
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
