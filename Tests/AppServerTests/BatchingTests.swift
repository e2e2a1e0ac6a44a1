@testable import AppServer
import ExtensionKit
import Foundation
import HeraldCore
import PostgresNIO
import Store
import TestSupport
import Testing

/// Replies submitted together are checked and stored together; each still
/// gets the answer it would get alone.
@Suite("Reply intake in batches (group commit) and ingest")
struct BatchingTests {
    static let tokens = IntakeTests.tokens

    /// `ranged`: the ledger as runs write it (a partition and a range per
    /// campaign, Sql/0018's fast path), else written by hand (its general path).
    func withBatchingIntake<T: Sendable>(
        _ batching: ReplyBatching, ranged: Bool = false, _ body: @Sendable (ReplyIntake, Database) async throws -> T
    ) async throws -> T {
        try await TestDatabase.with { client, _ in
            try await client.exec(ranged ? Fixtures.threeDeliveriesAsRunsWriteThem : Fixtures.threeDeliveries)
            let intake = ReplyIntake(store: ReplyStore(client: client, logger: TestDatabase.logger),
                                     tokens: Self.tokens, logger: TestDatabase.logger, batching: batching)
            return try await body(intake, client)
        }
    }

    /// Holds the `replies` table locked from a connection of its own
    /// (EXCLUSIVE: reads pass, inserts wait) while `body` runs, until `body`
    /// calls `release`: no batch can store anything meanwhile, so what is
    /// submitted queues up and goes into one batch.
    static func lockingReplies<T: Sendable>(
        _ db: Database, _ body: @Sendable (_ release: @escaping @Sendable () -> Void) async throws -> T
    ) async throws -> T {
        let (released, releaseSink) = AsyncStream.makeStream(of: Void.self)
        let (locked, lockedSink) = AsyncStream.makeStream(of: Void.self)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await db.holdingLock(on: "replies", locked: lockedSink, until: released)
                return nil
            }
            for await _ in locked {}
            let result: T
            do {
                result = try await body { releaseSink.finish() }
            } catch {
                releaseSink.finish()
                throw error
            }
            releaseSink.finish()
            try await group.waitForAll()
            return result
        }
    }

    /// Waits (bounded) until `count` replies are waiting for their answer.
    static func waitUntilOutstanding(_ intake: ReplyIntake, _ count: Int) async throws {
        for _ in 0..<2000 where intake.repliesWaiting < count {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(intake.repliesWaiting == count)
    }

    @Test func aBurstOfDistinctRepliesIsStoredOnceEach() async throws {
        try await withBatchingIntake(.init(maxBatch: 64, maxConcurrentBatches: 2)) { intake, db in
            let bodies = (0..<300).map { i -> String in
                switch i % 3 {
                case 0: IntakeTests.reply(delivery: 1, action: "love_it")
                case 1: IntakeTests.reply(delivery: 2, action: "comment", text: "reply \(i)")
                default: IntakeTests.reply(delivery: 3, action: "dont_care")
                }
            }
            let first = try await Self.submitAll(intake, bodies)
            #expect(first == Array(repeating: "stored", count: bodies.count))
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 300)
            #expect(try await db.scalar("SELECT count(DISTINCT text) FROM replies", as: Int64.self) == 100)
            // The same bodies again, as retrying apps send them: nothing stored twice.
            let again = try await Self.submitAll(intake, bodies)
            #expect(again == Array(repeating: "duplicate", count: bodies.count))
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 300)
        }
    }

    /// With a reply the database refuses in the batch, the batch's statement
    /// fails and each reply is stored on its own; without, one statement.
    @Test(arguments: [false, true], [false, true])
    func oneBatchGivesEachReplyItsOwnAnswer(withARefusal: Bool, ranged: Bool) async throws {
        try await withBatchingIntake(.init(maxBatch: 500, maxConcurrentBatches: 1), ranged: ranged) { intake, db in
            try await db.exec("ALTER TABLE replies ADD CONSTRAINT \"reply text must not say bad\" CHECK (text IS NULL OR text <> 'bad')")
            let storedBefore = UUID()
            #expect(try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "love_it", replyID: storedBefore).utf8)) == .success(.stored))

            let twice = UUID()
            var list: [(body: String, expected: String)] = []
            for i in 0..<20 {
                list.append((IntakeTests.reply(delivery: Int64(1 + i % 3), action: i % 3 == 1 ? "comment" : "dont_care",
                                                text: i % 3 == 1 ? "tab\there, back\\slash, new\nline \(i)" : nil), "stored"))
            }
            if withARefusal {
                list.append((IntakeTests.reply(delivery: 2, action: "comment", text: "bad"), "reply_refused"))
            }
            list.append((IntakeTests.reply(delivery: 999, action: "love_it"), "unknown_delivery"))
            list.append((IntakeTests.reply(delivery: 1, action: "reserve"), "action_not_allowed"))
            list.append((IntakeTests.reply(delivery: 1, action: "love_it", text: "no text here"), "text_not_allowed"))
            list.append((IntakeTests.reply(delivery: 1, action: "love_it", replyID: storedBefore), "duplicate"))
            list.append((IntakeTests.reply(delivery: 3, action: "love_it", replyID: twice), "stored"))
            list.append((IntakeTests.reply(delivery: 3, action: "love_it", replyID: twice), "duplicate"))
            list.append((IntakeTests.reply(delivery: 2, action: "comment", text: "after the refused one"), "stored"))

            let cases = list
            // A first reply takes the only batch slot and waits for the lock;
            // every other one queues behind it and they form one batch.
            let answers = try await Self.lockingReplies(db) { release in
                try await withThrowingTaskGroup(of: (Int, String).self) { group in
                    group.addTask { (-1, Self.answer(try await intake.submit(Array(IntakeTests.reply(delivery: 3, action: "love_it").utf8)))) }
                    try await Self.waitUntilOutstanding(intake, 1)
                    for (i, c) in cases.enumerated() {
                        group.addTask { (i, Self.answer(try await intake.submit(Array(c.body.utf8)))) }
                        // One at a time, so they queue in this order.
                        try await Self.waitUntilOutstanding(intake, i + 2)
                    }
                    // Nothing is answered while nothing can be stored.
                    #expect(intake.repliesWaiting == cases.count + 1)
                    release()
                    var answers: [Int: String] = [:]
                    for try await (i, a) in group { answers[i] = a }
                    return answers
                }
            }
            #expect(answers[-1] == "stored")
            for (i, c) in cases.enumerated() {
                #expect(answers[i] == c.expected, "case \(i): \(c.body.prefix(100))")
            }
            #expect(intake.repliesWaiting == 0)
            // The one before, the first held one, 20 + 1 + 1 of the batch.
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 24)
            #expect(try await db.scalar("SELECT count(*) FROM replies WHERE reply_id = '\(twice)'", as: Int64.self) == 1)
            #expect(try await db.scalar("SELECT count(*) FROM replies WHERE text = E'tab\\there, back\\\\slash, new\\nline 1'", as: Int64.self) == 1)
        }
    }

    @Test(arguments: [false, true])
    func ingestGivesEachLineItsAnswer(ranged: Bool) async throws {
        try await withBatchingIntake(.init(), ranged: ranged) { intake, db in
            try await db.exec("ALTER TABLE replies ADD CONSTRAINT \"reply text must not say bad\" CHECK (text IS NULL OR text <> 'bad')")
            let texts = ["tab\there", "back\\slash \\N", "new\nline\r\n", "très bien 👍 — 谢谢", "\\.", "plain"]
            var lines: [String] = []
            var expectedBad: [Int: String] = [:]
            var stored = 0
            var duplicates = 0
            let twice = UUID()
            let acrossBatches = UUID()
            for i in 1...2500 {
                let line: String
                switch i {
                case 7, 1500: line = IntakeTests.reply(delivery: 2, action: "comment", text: "first of two", replyID: twice)
                case 8: line = IntakeTests.reply(delivery: 2, action: "comment", text: "second of two", replyID: twice)
                case 900: line = IntakeTests.reply(delivery: 1, action: "love_it", replyID: acrossBatches)
                case 2100: line = IntakeTests.reply(delivery: 1, action: "love_it", replyID: acrossBatches)
                case 50: line = "{broken"; expectedBad[i] = "malformed_json"
                case 51: line = IntakeTests.reply(delivery: 1, token: Self.tokens.token(delivery: 2), action: "love_it"); expectedBad[i] = "bad_token"
                case 1200: line = IntakeTests.reply(delivery: 42, action: "love_it"); expectedBad[i] = "unknown_delivery"
                case 1201: line = IntakeTests.reply(delivery: 3, action: "comment", text: "not here"); expectedBad[i] = "action_not_allowed"
                case 1777: line = IntakeTests.reply(delivery: 2, action: "comment", text: "bad"); expectedBad[i] = "reply_refused"
                case 2000: line = "   "
                default:
                    line = i % 2 == 0 ? IntakeTests.reply(delivery: 2, action: "comment", text: texts[(i / 2) % texts.count])
                                      : IntakeTests.reply(delivery: Int64(i % 4 == 1 ? 1 : 3), action: "dont_care")
                }
                lines.append(line)
                switch i {
                case 7, 900: stored += 1
                case 8, 1500, 2100: duplicates += 1
                case 2000: break
                default: if expectedBad[i] == nil { stored += 1 }
                }
            }
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("copy-\(UUID()).jsonl").path
            try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: path) }

            let report = try await intake.ingest(file: path, batch: 1000)
            #expect(report.lines == 2499)
            #expect(report.stored == stored)
            #expect(report.duplicates == duplicates)
            #expect(Dictionary(uniqueKeysWithValues: report.bad.map { ($0.line, $0.error.code) }) == expectedBad)
            #expect(report.bad.first { $0.line == 1777 }?.error.message.contains("reply text must not say bad") == true)
            #expect(try await db.scalar("SELECT count(*) FROM replies WHERE source = 'ingest'", as: Int64.self) == Int64(stored))
            // The first of two lines with one reply_id is the one stored; texts verbatim.
            #expect(try await db.scalar("SELECT text FROM replies WHERE reply_id = '\(twice)'", as: String.self) == "first of two")
            for text in texts {
                let rows = try await db.query("SELECT count(*) FROM replies WHERE text = \(text)", logger: TestDatabase.logger)
                for try await n in rows.decode(Int64.self) { #expect(n > 0, "\(text.debugDescription)") }
            }

            let again = try await intake.ingest(file: path)
            #expect(again.stored == 0)
            #expect(again.duplicates == stored + duplicates)
            #expect(again.bad.map(\.line).sorted() == expectedBad.keys.sorted())
        }
    }

    static func answer(_ outcome: Result<ReplyIntake.Stored, ReplyError>) -> String {
        switch outcome {
        case .success(.stored): "stored"
        case .success(.duplicate): "duplicate"
        case .failure(let error): error.code
        }
    }

    static func submitAll(_ intake: ReplyIntake, _ bodies: [String]) async throws -> [String] {
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for (i, body) in bodies.enumerated() {
                group.addTask { (i, answer(try await intake.submit(Array(body.utf8)))) }
            }
            var answers = Array(repeating: "", count: bodies.count)
            for try await (i, a) in group { answers[i] = a }
            return answers
        }
    }
}
