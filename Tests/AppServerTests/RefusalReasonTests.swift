@testable import AppServer
import ExtensionKit
import Foundation
import HeraldCore
import PostgresNIO
import Store
import TestSupport
import Testing

/// What needs the delivery and the catalogue is decided by one statement
/// (Sql/0018) that also says why it refused (Sql/0019): the intake and
/// `herald ingest` only word its reasons, with no catalogue of their own.
@Suite("Reply intake: the database's reasons")
struct RefusalReasonTests {
    /// Every reason, in one batch through the real statement, with what the
    /// client is told: delivery 1 is a poster (buttons love_it, dont_care),
    /// 2 a feedback prompt (text input comment).
    @Test func oneBatchWithEveryReason() async throws {
        try await withIntake { _, db in
            let store = ReplyStore(client: db, logger: TestDatabase.logger)
            let long = String(repeating: "x", count: ReplyRules.maxTextCharacters + 1)
            let cases: [(delivery: Int64, action: String, text: String?, expected: String?)] = [
                (1, "love_it", nil, nil),
                (999_999, "love_it", nil, "unknown_delivery"),
                (1, "remind", nil, "action_not_allowed"),
                (1, "remind", long, "action_not_allowed"),
                (1, "love_it", "a text", "text_not_allowed"),
                (1, ReplyAction.defaultActionIdentifier, "a text", "text_not_allowed"),
                (2, "comment", long, "text_too_long"),
                (2, "comment", "fine", nil),
                (2, ReplyAction.dismissActionIdentifier, nil, nil),
            ]
            let bodies = cases.map { c in
                ReplyBody(delivery: c.delivery, token: "", action: c.action, text: c.text,
                          occurredAt: Date(timeIntervalSince1970: 1_800_000_000), replyID: UUID())
            }
            let batch = try await store.store(bodies.map(ReplyIntake.incoming), source: "api")
            #expect(batch.stored == 3)
            var said: [String?] = Array(repeating: nil, count: cases.count)
            for refusal in batch.refusals { said[refusal.position] = ReplyIntake.reason(refusal, of: bodies[refusal.position]).code }
            #expect(said == cases.map(\.expected))
            let poster = try #require(batch.refusals.first { $0.position == 2 })
            #expect(poster.category == "poster.v1", "the category is named for the message")
            #expect(ReplyIntake.reason(poster, of: bodies[2]).message.contains("\"poster.v1\""))
            #expect(batch.refusals.first { $0.position == 1 }?.category == nil)
        }
    }

    /// An action a marketer adds to a category is accepted on the next reply.
    @Test func theIntakeTakesANewActionAtOnce() async throws {
        try await withIntake { intake, db in
            #expect(try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "love_it").utf8)) == .success(.stored))
            let refused = try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "remind").utf8))
            #expect(refused.errorCode == "action_not_allowed")
            try await db.exec("INSERT INTO category_actions (category_id, action_id, position) VALUES ('poster.v1', 'remind', 3)")
            let added = try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "remind").utf8))
            #expect(added == .success(.stored))
        }
    }

    /// An action taken out of a category is refused at once, and the refusal says why.
    @Test func theIntakeRefusesAnActionTakenOutAtOnce() async throws {
        try await withIntake { intake, db in
            #expect(try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "dont_care").utf8)) == .success(.stored))
            try await db.exec("DELETE FROM category_actions WHERE category_id = 'poster.v1' AND action_id = 'dont_care'")
            let id = UUID()
            let refused = try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "dont_care", replyID: id).utf8))
            #expect(refused.errorCode == "action_not_allowed")
            let rows = try await db.query("SELECT count(*) FROM replies WHERE reply_id = \(id)", logger: TestDatabase.logger)
            for try await count in rows.decode(Int64.self) { #expect(count == 0) }
        }
    }

    /// The same for `herald ingest`, which stores through the same statement.
    @Test func ingestRefusesAnActionTakenOutAtOnce() async throws {
        try await withIntake { intake, db in
            #expect(try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "dont_care").utf8)) == .success(.stored))
            try await db.exec("DELETE FROM category_actions WHERE category_id = 'poster.v1' AND action_id = 'dont_care'")
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("taken-out-\(UUID()).jsonl").path
            try (IntakeTests.reply(delivery: 1, action: "dont_care") + "\n" + IntakeTests.reply(delivery: 1, action: "love_it") + "\n")
                .write(toFile: path, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let report = try await intake.ingest(file: path)
            #expect(report.stored == 1)
            #expect(report.bad.map(\.line) == [1])
            #expect(report.bad.map(\.error.code) == ["action_not_allowed"])
        }
    }

    /// A binary of the previous version, during a rolling upgrade, still
    /// stores through the 0018 form of the call.
    @Test func theFormerCallStillStores() async throws {
        try await withIntake { _, db in
            let rows = try await db.query("""
                CALL herald_commit_replies(ARRAY[gen_random_uuid()], ARRAY[1]::bigint[], ARRAY['love_it'], ARRAY[false],
                                           ARRAY[''], ARRAY[1800000000]::float8[], ARRAY[true], 'api', NULL, NULL, NULL)
                """, logger: TestDatabase.logger)
            for try await (stored, refused, duplicates) in rows.decode((Int32, [Int32], [Int32]).self) {
                #expect(stored == 1 && refused.isEmpty && duplicates.isEmpty)
            }
        }
    }
}

extension Result where Failure == ReplyError {
    var errorCode: String? {
        guard case .failure(let error) = self else { return nil }
        return error.code
    }
}
