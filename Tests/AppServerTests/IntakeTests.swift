import AppServer
import ExtensionKit
import Foundation
import HeraldCore
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Store
import TestSupport
import Testing

/// A database with three deliveries: 1 of a poster (buttons), 2 of a feedback
/// prompt (text input), and 3 of the poster again.
func withIntake<T: Sendable>(_ body: @Sendable (ReplyIntake, Database) async throws -> T) async throws -> T {
    try await TestDatabase.with { client, _ in
        try await client.exec(Fixtures.threeDeliveries)
        let intake = ReplyIntake(store: ReplyStore(client: client, logger: TestDatabase.logger),
                                 tokens: ReplyTokens(secret: IntakeTests.secret), logger: TestDatabase.logger)
        return try await body(intake, client)
    }
}

@Suite("Reply intake (contract 4)")
struct IntakeTests {
    static let secret = try! ReplySecret(base64: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    static let tokens = ReplyTokens(secret: secret)

    static func reply(delivery: Int64, token: String? = nil, action: String, text: String? = nil,
                      replyID: UUID = UUID()) -> String {
        var object: [String: Any] = [
            "delivery": delivery, "token": token ?? tokens.token(delivery: delivery), "action": action,
            "occurred_at": "2026-11-20T10:00:00Z", "reply_id": replyID.uuidString,
        ]
        if let text { object["text"] = text }
        return String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    func post(_ client: some TestClientProtocol, _ body: String) async throws -> (Int, [String: String]) {
        try await client.execute(uri: "/v1/replies", method: .post, headers: [.contentType: "application/json"],
                                 body: ByteBuffer(string: body)) { response in
            let object = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: String] ?? [:]
            #expect(response.headers[.contentType] == "application/json")
            return (response.status.code, object)
        }
    }

    @Test func everyAnswerOfTheContract() async throws {
        try await withIntake { intake, db in
            let app = Application(router: AppHTTPServer.router(intake: intake))
            try await app.test(.live) { client in
                // 202 stored, then 200 for the same reply_id.
                let id = UUID()
                #expect(try await post(client, Self.reply(delivery: 1, action: "love_it", replyID: id)).0 == 202)
                #expect(try await post(client, Self.reply(delivery: 1, action: "love_it", replyID: id)).0 == 200)
                // Typed text on the feedback prompt; iOS's own identifiers on anything.
                #expect(try await post(client, Self.reply(delivery: 2, action: "comment", text: "très bien 👍 — 谢谢")).0 == 202)
                #expect(try await post(client, Self.reply(delivery: 3, action: ReplyAction.defaultActionIdentifier)).0 == 202)
                #expect(try await post(client, Self.reply(delivery: 3, action: ReplyAction.dismissActionIdentifier)).0 == 202)

                let cases: [(String, Int, String)] = [
                    ("{not json", 400, "malformed_json"),
                    (#"{"delivery": 1}"#, 400, "malformed_json"),
                    (#"{"delivery": "one", "token": "x", "action": "a", "occurred_at": "2026-11-20T10:00:00Z", "reply_id": "6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5F"}"#, 400, "malformed_json"),
                    (Self.reply(delivery: 1, token: Self.tokens.token(delivery: 2), action: "love_it"), 401, "bad_token"),
                    (Self.reply(delivery: 1, token: String(Self.tokens.token(delivery: 1).dropLast()), action: "love_it"), 401, "bad_token"),
                    (Self.reply(delivery: 1, token: ReplyTokens(secret: .generate()).token(delivery: 1), action: "love_it"), 401, "bad_token"),
                    (Self.reply(delivery: 1, token: "", action: "love_it"), 401, "bad_token"),
                    (Self.reply(delivery: 999, action: "love_it"), 404, "unknown_delivery"),
                    (Self.reply(delivery: 1, action: "reserve"), 422, "action_not_allowed"),
                    (Self.reply(delivery: 1, action: "love_it", text: "hi"), 422, "text_not_allowed"),
                    (Self.reply(delivery: 2, action: "comment", text: String(repeating: "字", count: 2001)), 422, "text_too_long"),
                    (Self.reply(delivery: 2, action: "comment", text: "nul\u{0}byte"), 422, "text_invalid"),
                    (Self.reply(delivery: 2, action: "comment", text: String(repeating: "x", count: 20_000)), 413, "body_too_large"),
                ]
                for (body, status, code) in cases {
                    let (got, json) = try await post(client, body)
                    #expect(got == status, "\(body.prefix(120))")
                    #expect(json["error"] == code, "\(body.prefix(120))")
                    #expect(!(json["message"] ?? "").isEmpty)
                }
            }
            // Exactly the four good replies, text verbatim; the refused ones stored nothing.
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 4)
            #expect(try await db.scalar("SELECT text FROM replies WHERE text IS NOT NULL", as: String.self) == "très bien 👍 — 谢谢")
            #expect(try await db.scalar("SELECT text FROM analyst.feedback_text", as: String.self) == "très bien 👍 — 谢谢")
        }
    }

    /// A transient fault the server reports for a statement (here a lock
    /// timeout, 55P03, while another session holds the replies table) is 503
    /// with Retry-After, never 500; once the lock is gone the same reply is
    /// stored.
    @Test func aLockTimeoutIsAnswered503WithRetryAfter() async throws {
        try await TestDatabase.with { admin, config in
            try await admin.exec(Fixtures.threeDeliveries)
            try await admin.exec("ALTER DATABASE \(config.database) SET lock_timeout = '300ms'")
            try await withPostgres(config, logger: TestDatabase.logger) { client in
                let intake = ReplyIntake(store: ReplyStore(client: client, logger: TestDatabase.logger),
                                         tokens: ReplyTokens(secret: IntakeTests.secret), logger: TestDatabase.logger)
                let app = Application(router: AppHTTPServer.router(intake: intake))
                let body = Self.reply(delivery: 1, action: "love_it")
                try await app.test(.live) { http in
                    try await admin.withConnection { holder in
                        _ = try await holder.query("BEGIN", logger: TestDatabase.logger)
                        _ = try await holder.query("LOCK TABLE replies, deliveries IN ACCESS EXCLUSIVE MODE", logger: TestDatabase.logger)
                        for _ in 0..<3 {
                            try await http.execute(uri: "/v1/replies", method: .post, headers: [.contentType: "application/json"],
                                                   body: ByteBuffer(string: body)) { response in
                                #expect(response.status.code == 503, "\(String(buffer: response.body))")
                                #expect(response.headers[.retryAfter] != nil)
                                #expect(String(buffer: response.body).contains("\"unavailable\""))
                            }
                        }
                        _ = try await holder.query("ROLLBACK", logger: TestDatabase.logger)
                    }
                    #expect(try await post(http, body).0 == 202)
                }
            }
            #expect(try await admin.scalar("SELECT count(*) FROM replies", as: Int64.self) == 1)
        }
    }

    /// A deadlock or a serialization failure (raised here by a trigger on
    /// `replies`, so that the server reports it from inside the statement
    /// that stores the batch) is 503 with Retry-After, never 500 and never a
    /// refusal; once it is gone the same reply is stored. An app retrying
    /// through the fault more often than the per-delivery limit allows is
    /// still answered 503, not 429: a retry the server caused uses no allowance.
    @Test(arguments: ["40P01", "40001"])
    func aLostRaceIsAnswered503(state: String) async throws {
        try await withIntake { intake, db in
            try await db.exec("""
                CREATE FUNCTION lose_the_race() RETURNS trigger LANGUAGE plpgsql AS
                  $$ BEGIN RAISE EXCEPTION 'lost a race' USING ERRCODE = '\(state)'; END $$;
                CREATE TRIGGER lose_the_race BEFORE INSERT ON replies FOR EACH ROW EXECUTE FUNCTION lose_the_race();
                """)
            let app = Application(router: AppHTTPServer.router(intake: intake))
            let body = Self.reply(delivery: 1, action: "love_it")
            try await app.test(.live) { http in
                for _ in 0..<(AppServerLimits().perDelivery.burst + 2) {
                    try await http.execute(uri: "/v1/replies", method: .post, headers: [.contentType: "application/json"],
                                           body: ByteBuffer(string: body)) { response in
                        #expect(response.status.code == 503, "\(state): \(String(buffer: response.body))")
                        #expect(response.headers[.retryAfter] != nil)
                    }
                }
                try await db.exec("DROP TRIGGER lose_the_race ON replies")
                #expect(try await post(http, body).0 == 202)
            }
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 1)
        }
    }

    @Test func aReplyRetriedFiveTimesIsStoredOnce() async throws {
        try await withIntake { intake, db in
            let app = Application(router: AppHTTPServer.router(intake: intake))
            let body = Self.reply(delivery: 2, action: "comment", text: "again?")
            try await app.test(.live) { client in
                var statuses: [Int] = []
                for _ in 0..<5 { statuses.append(try await post(client, body).0) }
                #expect(statuses == [202, 200, 200, 200, 200])
            }
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 1)
        }
    }

    @Test func notificationConfigFollowsTheDatabaseWithETag() async throws {
        try await withIntake { intake, db in
            let app = Application(router: AppHTTPServer.router(intake: intake))
            try await app.test(.live) { client in
                let (etag, config) = try await client.execute(uri: "/v1/notification-config", method: .get) { response in
                    #expect(response.status == .ok)
                    return (response.headers[.eTag] ?? "", try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
                }
                let root = try #require(config?["NotificationConfig"] as? [String: Any])
                let categories = try #require(root["UNNotificationCategory"] as? [String: [String: Any]])
                #expect(categories["flash_sale.v1"]?["actions"] as? [String] == ["reserve", "remind"])
                #expect(categories["feedback.v1"]?["options"] as? Int == 1)
                let actions = try #require(root["UNNotificationAction"] as? [String: [String: Any]])
                #expect(actions["reserve"]?["options"] as? Int == 4)
                #expect(actions["comment"]?["textInput"] as? [String: String] == ["buttonTitle": "Send", "placeholder": "Your thoughts"])
                #expect(actions["love_it"]?["title"] as? String == "I love it~")

                try await client.execute(uri: "/v1/notification-config", method: .get, headers: [.ifNoneMatch: etag]) { response in
                    #expect(response.status == .notModified)
                    #expect(response.body.readableBytes == 0)
                }
                try await db.exec("UPDATE actions SET title = 'Book it' WHERE id = 'reserve'")
                try await client.execute(uri: "/v1/notification-config", method: .get, headers: [.ifNoneMatch: etag]) { response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.eTag] != etag)
                    #expect(String(buffer: response.body).contains("Book it"))
                }
                try await client.execute(uri: "/healthz", method: .get) { response in
                    #expect(response.status == .ok)
                }
            }
        }
    }

    @Test func ingestStoresExactlyTheGoodLines() async throws {
        try await withIntake { intake, db in
            let good1 = Self.reply(delivery: 1, action: "dont_care")
            let good2 = Self.reply(delivery: 2, action: "comment", text: "line two\nhas a newline")
            let lines = [
                good1,
                "",
                "{broken",
                Self.reply(delivery: 1, token: Self.tokens.token(delivery: 3), action: "love_it"),
                good2,
                Self.reply(delivery: 42, action: "love_it"),
                Self.reply(delivery: 3, action: "comment", text: "not here"),
            ]
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("replies-\(UUID()).jsonl").path
            try (lines.joined(separator: "\n")).write(toFile: path, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: path) }

            let report = try await intake.ingest(file: path, batch: 2)
            #expect(report.lines == 6)
            #expect(report.stored == 2)
            #expect(report.bad.map(\.line).sorted() == [3, 4, 6, 7])
            #expect(report.bad.sorted { $0.line < $1.line }.map(\.error.code) == ["malformed_json", "bad_token", "unknown_delivery", "action_not_allowed"])
            #expect(try await db.scalar("SELECT count(*) FROM replies WHERE source = 'ingest'", as: Int64.self) == 2)
            #expect(try await db.scalar("SELECT text FROM replies WHERE delivery_id = 2", as: String.self) == "line two\nhas a newline")

            let again = try await intake.ingest(file: path)
            #expect(again.stored == 0)
            #expect(again.duplicates == 2)
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 2)
        }
    }
}
