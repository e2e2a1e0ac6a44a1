import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// Journeys' rules in SQL, their one authority (contract 11): the text rules against their
/// golden table, and the check that refuses a journey that cannot run, naming the step.
@Suite("Journeys: text rules and the check", .serialized)
struct JourneyRuleTests {
    /// Rule, typed text, the reply's locale, and whether the rule holds.
    static let golden: [(rule: String, text: String?, locale: String, holds: Bool)] = [
        (#"{"any_words": {"en": ["damaged", "late"]}}"#, "The box arrived DAMAGED!", "en", true),
        (#"{"any_words": {"en": ["damaged", "late"]}}"#, "it was translated badly", "en", false),  // a whole word only
        (#"{"any_words": {"en": ["damaged", "late"]}}"#, "Late again.", "en-GB", true),  // the language of the locale
        (#"{"any_words": {"en": ["damaged"], "fr": ["abîmé"]}}"#, "Colis ABIME", "fr-FR", true),  // accents and case ignored
        (#"{"any_words": {"en": ["damaged"], "fr": ["abîmé"]}}"#, "damaged", "fr", false),  // French words for a French reply
        (#"{"any_words": {"*": ["broken"]}}"#, "kaputt, broken", "de", true),
        (#"{"any_words": {"en": ["never arrived"]}}"#, "It never  arrived", "en", false),  // a phrase as written
        (#"{"any_words": {"en": ["never arrived"]}}"#, "It never arrived at all", "en", true),
        (#"{"any_words": {"en": ["c++"]}}"#, "I like c++ a lot", "en", false),  // no word boundary after "+": not a word
        // Chinese, Japanese and Thai mark no word boundary: their words are found inside the text.
        (#"{"any_words": {"zh": ["慢", "破损"]}}"#, "配送有点慢。", "zh-Hans", true),
        (#"{"any_words": {"zh": ["慢", "破损"]}}"#, "非常满意，包装很好。", "zh-Hans", false),
        (#"{"any_words": {"ja": ["遅"]}}"#, "配送が少し遅かった。", "ja", true),
        (#"{"any_words": {"*": ["late", "遅"]}}"#, "translated", "en", false),  // a Latin word is still whole
        (#"{"pattern": "^no(pe)?$"}"#, "Nope", "en", true),
        (#"{"pattern": "^no(pe)?$"}"#, "not now", "en", false),
        (#"{"number": [1, 2]}"#, " 2 ", "en", true),
        (#"{"number": [1, 2]}"#, "3", "en", false),
        (#"{"number": [4, 5]}"#, "4,5", "fr", true),  // a comma as the decimal mark
        (#"{"number": [1, 5]}"#, "five", "en", false),
        (#"{"number": [1, 5]}"#, "1e3", "en", false),
        (#"{"empty": true}"#, "   ", "en", true),
        (#"{"empty": true}"#, nil, "en", true),
        (#"{"empty": false}"#, "ok", "en", true),
        (#"{"empty": false}"#, nil, "en", false),
        (#"{"pattern": "x"}"#, nil, "en", false),  // no text matches no pattern
    ]

    @Test func theTextRulesAnswerAsTheirGoldenTableSays() async throws {
        try await TestDatabase.with { client, _ in
            for row in Self.golden {
                let holds = try await client.query(
                    "SELECT herald_text_rule_holds(\(row.rule)::jsonb, \(row.text), \(row.locale))", logger: TestDatabase.logger)
                var answer: Bool?
                for try await h in holds.decode(Bool.self) { answer = h }
                #expect(answer == row.holds, "\(row.rule) against \(String(describing: row.text)) in \(row.locale)")
            }
        }
    }

    @Test func aTextRuleThatDoesNotParseIsNamed() async throws {
        try await TestDatabase.with { client, _ in
            let cases: [(String, String?)] = [
                (#"{"pattern": "(("}"#, "pattern (( is not a regular expression"),
                (#"{"number": [5, 1]}"#, "number is a range of two numbers, the lower first"),
                (#"{"any_words": {"en": []}}"#, "any_words maps each locale"),
                (#"{"words": ["x"]}"#, "a text rule has exactly one of any_words, pattern, number or empty, not words"),
                (#"{"empty": true}"#, nil),
            ]
            for (rule, expected) in cases {
                let problem = try await client.scalar("SELECT coalesce(herald_text_rule_problem('\(rule)'::jsonb), '')", as: String.self)
                if let expected {
                    #expect(problem?.hasPrefix(expected) == true, "\(rule): \(problem ?? "no problem")")
                } else {
                    #expect(problem == "")
                }
            }
        }
    }

    /// A journey after an order, with every flaw the check knows: each is refused with its step.
    @Test func aJourneyThatCannotRunIsRefusedNamingEachStep() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec("""
                INSERT INTO segments (id, name, rule) VALUES (7, 'vip', '{"user.vip": true}');
                INSERT INTO journeys (id, name, first_step, entry, entry_event) VALUES (1, 'After the order', 'ask', 'conversion', 'purchase');
                INSERT INTO campaigns (id, name, kind, status, content, media_url, journey_id)
                VALUES (90, 'How was it', 'poster', 'draft', '{"en": {"title": "How was your order?", "body": "Tell us"}}', 'https://example.com/p.png', 1),
                       (91, 'Not the journey''s', 'poster', 'draft', '{"en": {"title": "Hi", "body": "There"}}', 'https://example.com/p.png', NULL);
                INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id, timeout, of_step) VALUES
                    (1, 1, 'ask', 'send', 90, NULL, NULL),
                    (1, 1, 'listen', 'wait_for', NULL, NULL, 'ask'),
                    (1, 1, 'mood', 'branch', NULL, NULL, 'ask'),
                    (1, 1, 'stray', 'exit', NULL, NULL, NULL),
                    (1, 1, 'other', 'send', 91, NULL, NULL),
                    (1, 1, 'ab', 'split', NULL, NULL, NULL);
                INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES
                    (1, 1, 'ask', 1, 'next', '{}', 'listen'),
                    (1, 1, 'listen', 1, 'text', '{"pattern": "(("}', 'mood'),
                    (1, 1, 'listen', 2, 'next', '{}', 'nowhere'),
                    (1, 1, 'mood', 1, 'segment', '{"segment_id": 8, "in": true}', 'other'),
                    (1, 1, 'mood', 2, 'else', '{}', 'other'),
                    (1, 1, 'other', 1, 'next', '{}', 'ab'),
                    (1, 1, 'ab', 1, 'share', '{"share": 60}', 'other');
                """)
            var problems: [String] = []
            for try await (step, problem) in try await client.query(
                "SELECT coalesce(step, ''), problem FROM herald_journey_problems(1, 1) ORDER BY 1, 2", logger: TestDatabase.logger
            ).decode((String, String).self) {
                problems.append("\(step): \(problem)")
            }
            #expect(problems == [
                "ab: a loop with no wait in it: ab → other → ab",
                "ab: its shares add up to 60, not 100",
                "listen: a wait_for needs a timeout",
                "listen: a wait_for needs a timeout edge",
                "listen: edge 1: pattern (( is not a regular expression: invalid regular expression: parentheses () not balanced",
                "listen: edge 2 goes to nowhere, which is not a step",
                "listen: edge 2: a wait_for step takes no next edge",
                "mood: edge 1: a segment edge names a segment that exists and whether the user is in it: {\"segment_id\": 3, \"in\": true}",
                "other: its campaign 91 is not a message of this journey (campaigns.journey_id)",
                "stray: nothing reaches it from ask",
            ])
            // Scheduling it is refused with every problem; the row stays a draft.
            await #expect(throws: (any Error).self) {
                try await client.exec("UPDATE journeys SET status = 'scheduled' WHERE id = 1")
            }
            #expect(try await client.scalar("SELECT status FROM journeys WHERE id = 1", as: String.self) == "draft")
            do {
                try await client.exec("UPDATE journeys SET status = 'running' WHERE id = 1")
            } catch {
                let text = String(reflecting: error)
                #expect(text.contains(#"journey "After the order" cannot run: step ab: a loop with no wait in it"#), "\(text)")
                #expect(text.contains("step stray: nothing reaches it from ask"))
            }

            // Mended, it is scheduled.
            try await client.exec("""
                UPDATE journey_steps SET timeout = '2 days' WHERE step = 'listen';
                UPDATE journey_steps SET campaign_id = 90 WHERE step = 'other';
                UPDATE campaigns SET journey_id = 1 WHERE id = 91;
                UPDATE journey_steps SET campaign_id = 91 WHERE step = 'other';
                DELETE FROM journey_steps WHERE step = 'stray';
                UPDATE journey_edges SET rule = '{"pattern": "^(damaged|late)$"}' WHERE from_step = 'listen' AND position = 1;
                UPDATE journey_edges SET kind = 'timeout', to_step = NULL WHERE from_step = 'listen' AND position = 2;
                UPDATE journey_edges SET rule = '{"segment_id": 7, "in": true}' WHERE from_step = 'mood' AND position = 1;
                UPDATE journey_edges SET rule = '{"share": 100}', to_step = NULL WHERE from_step = 'ab';
                UPDATE journeys SET status = 'scheduled' WHERE id = 1;
                """)
            #expect(try await client.scalar("SELECT count(*) FROM herald_journey_problems(1, 1)", as: Int64.self) == 0)
            #expect(try await client.scalar("SELECT status FROM journeys WHERE id = 1", as: String.self) == "scheduled")
        }
    }

    /// A reply, a receipt or a conversion of a waiting member's user makes it due in the
    /// transaction that stores the event; a member not waiting is left alone.
    @Test func anEventOfAWaitingMembersUserMakesItDueAtOnce() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.audience(count: 3))
            try await client.exec("""
                INSERT INTO journeys (id, name, first_step, entry, entry_event) VALUES (1, 'J', 'w', 'conversion', 'purchase');
                INSERT INTO journey_members (journey_id, version, user_id, step, due_at, waiting) VALUES
                    (1, 1, 1, 'w', now() + interval '2 days', true),
                    (1, 1, 2, 'w', now() + interval '2 days', false),
                    (1, 1, 3, 'w', now() + interval '2 days', true);
                INSERT INTO conversions (user_id, event, occurred_at, idempotency_key) VALUES (1, 'purchase', now(), 'k1'), (2, 'purchase', now(), 'k2');
                """)
            let due = try await client.scalar(
                "SELECT string_agg(user_id::text, ',' ORDER BY user_id) FROM journey_members WHERE due_at <= now()", as: String.self)
            #expect(due == "1")
        }
    }
}
