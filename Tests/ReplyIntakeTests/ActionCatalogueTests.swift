import ExtensionKit
import Foundation
import HeraldCore
import NIOConcurrencyHelpers
@testable import ReplyIntake
import Store
import Testing
import TestSupport

/// The categories' actions kept between batches (ActionCatalogue): read once
/// per `maxAge`, read again before a reply is refused with a copy older than
/// the reply; and the intake, which stores what the committed catalogue
/// allows whatever the copy says.
@Suite("Reply intake: the action catalogue between batches")
struct ActionCatalogueTests {
    static let target = ReplyTarget(deliveryID: 7, campaignID: 1, deviceID: 1, userID: 1, categoryID: "poster.v1")

    static func body(_ action: String, text: String? = nil) -> ReplyBody {
        ReplyBody(delivery: 7, token: "t", action: action, text: text, occurredAt: Date(timeIntervalSince1970: 0), replyID: UUID())
    }

    /// A catalogue over rows the test changes, counting its reads.
    final class Rows: Sendable {
        let state = NIOLockedValueBox((actions: ["poster.v1": [CategoryAction(id: "love_it", takesText: false)]], reads: 0))
        var reads: Int { state.withLockedValue { $0.reads } }
        func add(_ action: CategoryAction) { state.withLockedValue { $0.actions["poster.v1", default: []].append(action) } }
        func read() -> ActionCatalogue.Actions { state.withLockedValue { $0.reads += 1; return $0.actions } }
    }

    @Test func oneReadServesTheBatchesWithinItsAge() async throws {
        let rows = Rows()
        let catalogue = ActionCatalogue(maxAge: .seconds(60)) { rows.read() }
        for _ in 0..<5 {
            let results = try await catalogue.check([Self.body("love_it"), Self.body(ReplyAction.dismissActionIdentifier)],
                                                    targets: [7: Self.target], since: .now)
            #expect(results.allSatisfy { $0 == nil })
        }
        #expect(rows.reads == 1)
        // Refusals that no catalogue could turn read nothing again.
        let unknown = try await catalogue.check([Self.body("love_it")], targets: [:], since: .now)
        #expect(unknown.map { $0?.code } == ["unknown_delivery"])
        #expect(rows.reads == 1)
    }

    @Test func anActionAddedAfterTheReadIsAcceptedAtOnce() async throws {
        let rows = Rows()
        let catalogue = ActionCatalogue(maxAge: .seconds(60)) { rows.read() }
        _ = try await catalogue.check([Self.body("love_it")], targets: [7: Self.target], since: .now)
        rows.add(CategoryAction(id: "reserve", takesText: false))
        // The batch began after the copy was read: refusing "reserve" takes a new read.
        let results = try await catalogue.check([Self.body("reserve"), Self.body("nope"), Self.body("love_it", text: "hi")],
                                                targets: [7: Self.target], since: .now)
        #expect(rows.reads == 2)
        #expect(results[0] == nil)
        #expect(results[1]?.code == "action_not_allowed")
        #expect(results[2]?.code == "text_not_allowed")
        // That read serves the next batches, refusals included.
        _ = try await catalogue.check([Self.body("nope")], targets: [7: Self.target], since: .now - .seconds(1))
        #expect(rows.reads == 2)
    }

    @Test func aCopyOlderThanItsAgeIsReadAgain() async throws {
        let rows = Rows()
        let catalogue = ActionCatalogue(maxAge: .milliseconds(20)) { rows.read() }
        _ = try await catalogue.check([Self.body("love_it")], targets: [7: Self.target], since: .now)
        try await Task.sleep(for: .milliseconds(40))
        _ = try await catalogue.check([Self.body("love_it")], targets: [7: Self.target], since: .now - .seconds(1))
        #expect(rows.reads == 2)
    }

    /// Through the intake and PostgreSQL: an action a marketer adds to a
    /// category is accepted on the next reply, though the catalogue was read
    /// a moment before.
    @Test func theIntakeTakesANewActionAtOnce() async throws {
        try await withIntake { intake, db in
            let first = try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "love_it").utf8))
            #expect(first == .success(.stored))
            let refused = try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "remind").utf8))
            #expect(refused.errorCode == "action_not_allowed")
            try await db.exec("INSERT INTO category_actions (category_id, action_id, position) VALUES ('poster.v1', 'remind', 3)")
            let added = try await intake.submit(Array(IntakeTests.reply(delivery: 1, action: "remind").utf8))
            #expect(added == .success(.stored))
        }
    }

    /// The database decides what is stored (Sql/0018): an action taken out
    /// of a category is refused at once, though the copy, read a moment
    /// before, still has it; and the refusal says why.
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
}

extension Result where Failure == ReplyError {
    var errorCode: String? {
        guard case .failure(let error) = self else { return nil }
        return error.code
    }
}
