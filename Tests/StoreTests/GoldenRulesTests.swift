import Foundation
import HeraldCore
import PostgresNIO
import Store
import TestSupport
import Testing

/// Rules checked in both languages, held to one answer: a campaign's content
/// entry and a locale tag are checked by SQL when a marketer writes the row
/// (the authority) and by Swift when a run reads it or an app registers. One
/// table of inputs goes through both; they must give the same answer, in
/// the same words.
@Suite("Golden tables: the same rule in Swift and in SQL")
struct GoldenRulesTests {
    /// Content entries, valid and not, one problem or several at once.
    static let contentEntries: [String] = [
        #"{"title": "Hello", "body": "World"}"#,
        #"{"title": "Hello", "subtitle": "Sub", "body": "World"}"#,
        #"{"title-loc-key": "T", "loc-key": "B"}"#,
        #"{"title-loc-key": "T", "title-loc-args": ["a", "b"], "loc-key": "B", "loc-args": []}"#,
        #"{"title": "Hello", "loc-key": "B", "loc-args": ["x"], "subtitle-loc-key": "S"}"#,
        #"{"title": "", "body": ""}"#,
        #"{"title": "Hello"}"#,
        #"{"body": "World"}"#,
        #"{}"#,
        #"[]"#,
        #""just text""#,
        #"null"#,
        #"{"title": 1, "body": "World"}"#,
        #"{"title": null, "body": "World"}"#,
        #"{"title": "Hello", "body": ["World"]}"#,
        #"{"title": "Hello", "body": "World", "subtitle": false}"#,
        #"{"title-loc-key": "", "loc-key": "B"}"#,
        #"{"title-loc-key": 7, "loc-key": "B"}"#,
        #"{"title": "Hello", "title-loc-key": "T", "body": "World"}"#,
        #"{"title": "Hello", "body": "World", "loc-key": "B"}"#,
        #"{"title": "Hello", "body": "World", "loc-args": ["x"]}"#,
        #"{"title-loc-key": "T", "title-loc-args": "x", "loc-key": "B"}"#,
        #"{"title-loc-key": "T", "title-loc-args": ["x", 2], "loc-key": "B"}"#,
        #"{"title": "Hello", "body": "World", "tittle": "typo"}"#,
        #"{"title": "Hello", "body": "World", "zz": 1, "a": 2}"#,
        #"{"title": "Hello", "body": "World", "sound": "default", "badge": 1}"#,
        #"{"title": 1, "body": 2, "extra": true}"#,
        #"{"title": "Hello", "title-loc-key": "", "body": "World"}"#,
        #"{"subtitle-loc-args": ["x"], "title": "Hello", "body": "World"}"#,
        #"{"title": "こんにちは", "body": "世界 🌍"}"#,
    ]

    /// Locale tags as apps and marketers write them, and near misses.
    static let localeTags: [String] = [
        "en", "fr", "fra", "en-GB", "en_GB", "zh-Hans", "zh-Hant-TW", "zh_Hant_TW", "sr-Latn-RS", "es-419", "x", "english",
        "e1", "1en", "en-", "-en", "en--GB", "en-GB-", "en-abcdefghi", "en-abcdefgh", "en GB", "en.GB", "", "EN", "en-gb",
        "éé", "en\n", "de-CH-1996", "en_-US",
    ]

    @Test func campaignContentEntries() async throws {
        try await TestDatabase.with { client, _ in
            var disagreements: [String] = []
            var refused = 0
            for text in Self.contentEntries {
                let json = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
                let swift = LocalizedText.problem(json)
                var sql: String?
                for try await answer in try await client.query(
                    "SELECT herald_campaign_content_problem(\(text)::jsonb)", logger: TestDatabase.logger).decode(String?.self) {
                    sql = answer
                }
                // Swift reads what SQL lets through, and refuses the rest in the same words.
                if swift != sql { disagreements.append("\(text): SQL \(sql ?? "ok"), Swift \(swift ?? "ok")") }
                if swift != nil { refused += 1 }
                #expect((try? LocalizedText(json: json)) != nil || swift != nil)
            }
            #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
            // The table holds both answers.
            #expect(refused > 15 && refused < Self.contentEntries.count - 3)
        }
    }

    @Test func localeTags() async throws {
        try await TestDatabase.with { client, _ in
            var disagreements: [String] = []
            for tag in Self.localeTags {
                var sql = false
                for try await answer in try await client.query("SELECT herald_is_locale(\(tag))", logger: TestDatabase.logger)
                    .decode(Bool.self) {
                    sql = answer
                }
                if LocaleMatch.isTag(tag) != sql { disagreements.append("\(tag.debugDescription): SQL \(sql), Swift \(!sql)") }
            }
            #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
            #expect(Self.localeTags.filter(LocaleMatch.isTag).count > 8)
            #expect(Self.localeTags.filter { !LocaleMatch.isTag($0) }.count > 8)
        }
    }
}
