import Foundation
import PostgresNIO
import Store
import TestSupport
import Testing

/// The reply rule has one owner, `herald_reply_refusal` (Sql/0036): the
/// store's check (`herald_reply_allowed`) is "no reason", and the reason a
/// refused reply is given comes from the same function. Its table, asked of
/// the server, and the store's check held to it for every row.
@Suite("The reply rule: one SQL function")
struct ReplyRuleTests {
    static let defaultAction = "com.apple.UNNotificationDefaultActionIdentifier"
    static let dismissAction = "com.apple.UNNotificationDismissActionIdentifier"

    /// A category with a button (`love_it`) and a text input (`comment`).
    static let table: [(action: String, hasText: Bool, checked: Bool, reason: String?)] = [
        ("love_it", false, true, nil),
        ("love_it", true, true, "text_not_allowed"),
        ("love_it", false, false, "text_refused"),
        ("comment", true, true, nil),
        ("comment", false, true, nil),
        ("comment", true, false, "text_refused"),
        ("remind", false, true, "action_not_allowed"),
        ("remind", true, true, "action_not_allowed"),
        ("remind", true, false, "action_not_allowed"),
        (defaultAction, false, true, nil),
        (defaultAction, true, true, "text_not_allowed"),
        (defaultAction, false, false, "text_refused"),
        (dismissAction, false, true, nil),
        (dismissAction, true, false, "text_not_allowed"),
        ("", false, true, "action_not_allowed"),
    ]

    @Test func everyCaseHasOneReasonAndTheStoresCheckAgrees() async throws {
        try await TestDatabase.with { client, _ in
            for row in Self.table {
                let sql = """
                    SELECT herald_reply_refusal(\(Self.literal(row.action)), \(row.hasText), \(row.checked),
                                                ARRAY['love_it', 'comment'], ARRAY['comment']),
                           \(row.checked) AND herald_reply_allowed(\(Self.literal(row.action)), \(row.hasText),
                                                                  ARRAY['love_it', 'comment'], ARRAY['comment'])
                    """
                var answer: (String?, Bool)?
                for try await r in try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
                    .decode((String?, Bool).self) {
                    answer = r
                }
                let (reason, stored) = try #require(answer)
                #expect(reason == row.reason, "\(row)")
                #expect(stored == (row.reason == nil), "the store's check for \(row)")
            }
        }
    }

    /// A category with no actions: only the default and dismiss actions pass.
    @Test func aCategoryWithoutActionsTakesOnlyTheSystemActions() async throws {
        try await TestDatabase.with { client, _ in
            let reason = try await client.scalar("SELECT herald_reply_refusal('love_it', false, true, '{}', '{}')",
                                                 as: String?.self) ?? nil
            #expect(reason == "action_not_allowed")
            let system = try await client.scalar("""
                SELECT herald_reply_refusal('\(Self.dismissAction)', false, true, '{}', '{}') IS NULL
                """, as: Bool.self)
            #expect(system == true)
        }
    }

    static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
}
