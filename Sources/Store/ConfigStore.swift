import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// The notification catalogue (categories, actions and their localized
/// labels) and the record of the config documents apps were given.
public struct ConfigStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Reads the whole catalogue (small tables) in one transaction, so that
    /// actions, categories and apps agree.
    public func catalogue() async throws -> NotificationCatalogue {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { conn in
            var actions: [NotificationCatalogue.Action] = []
            for try await (id, kind, options, defaultLocale, title, button, placeholder, localized) in try await conn.query("""
                SELECT id, kind, options, default_locale, title, text_button_title, text_placeholder, localized::text
                FROM actions
                """, logger: logger).decode((String, String, Int32, String, String, String?, String?, String).self) {
                var variants: [String: NotificationCatalogue.Labels] = [:]
                if case .object(let entries)? = try? JSONDecoder().decode(JSONValue.self, from: Data(localized.utf8)) {
                    for (tag, entry) in entries {
                        guard let t = entry["title"]?.stringValue else { continue }
                        variants[tag] = .init(title: t, textButtonTitle: entry["text_button_title"]?.stringValue,
                                              textPlaceholder: entry["text_placeholder"]?.stringValue)
                    }
                }
                actions.append(.init(id: id, kind: kind, options: Int(options), defaultLocale: defaultLocale,
                                     labels: .init(title: title, textButtonTitle: button, textPlaceholder: placeholder),
                                     localized: variants))
            }
            var categories: [NotificationCatalogue.Category] = []
            for try await (id, options, list, apps) in try await conn.query(
                try SQLQueries.named("catalogue/categories").query([:]), logger: logger).decode((String, Int32, [String], [String]?).self) {
                categories.append(.init(id: id, options: Int(options), actions: list, apps: apps))
            }
            var apps: Set<String> = []
            for try await name in try await conn.query("SELECT name FROM apps", logger: logger).decode(String.self) {
                apps.insert(name)
            }
            return NotificationCatalogue(actions: actions, categories: categories, apps: apps)
        }
    }

    /// Remembers which category definitions a document (by ETag) holds, so a
    /// device that reports the ETag is known to have them.
    public func record(_ documents: [(locale: String, document: NotificationCatalogue.Document)]) async throws {
        guard !documents.isEmpty else { return }
        let etags = documents.map(\.document.etag)
        let locales = documents.map(\.locale)
        let hashes = documents.map { d in
            JSONValue.object(d.document.categoryHashes.mapValues { .string($0) }).jsonText
        }
        try await client.query("""
            INSERT INTO config_documents (etag, locale, categories)
            SELECT * FROM unnest(\(etags)::text[], \(locales)::text[], \(hashes)::jsonb[])
            ON CONFLICT (etag) DO NOTHING
            """, logger: logger)
    }
}
