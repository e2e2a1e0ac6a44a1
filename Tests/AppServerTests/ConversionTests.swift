import AppServer
import Foundation
import HeraldCore
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Store
import TestSupport
import Testing

/// Conversions (Sql/0025): posted by the app's backend with its JWT for the
/// user, stored once per idempotency key; or loaded from a file.
@Suite("Conversions")
struct ConversionTests {
    static func body(user: String = "alice", event: String = "purchase", amount: Any? = "12.50", currency: String? = "EUR",
                     key: String = UUID().uuidString, extra: [String: Any] = [:]) -> String {
        var f: [String: Any] = ["user": user, "event": event, "occurred_at": "2026-11-20T10:00:00Z", "idempotency_key": key]
        if let amount { f["amount"] = amount }
        if let currency { f["currency"] = currency }
        for (k, v) in extra { f[k] = v }
        return AppHarness.body(f)
    }

    func post(_ h: AppHarness, _ http: any TestClientProtocol, _ body: String, as user: String? = "alice",
              contentType: String = "application/json") async throws -> (Int, String) {
        var headers: HTTPFields = [.contentType: contentType]
        if let user { headers[.authorization] = "Bearer \(try await h.issuer.token(user: user))" }
        return try await http.execute(uri: "/v1/conversions", method: .post, headers: headers,
                                      body: ByteBuffer(string: body)) { response in
            let object = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
            return (response.status.code, (object["status"] ?? object["error"]) as? String ?? "")
        }
    }

    @Test func everyAnswer() async throws {
        try await AppHarness.with { h, http in
            try await h.db.exec("INSERT INTO users (external_id, time_zone) VALUES ('alice', 'UTC'), ('bob', 'UTC')")
            let key = "order-42"
            #expect(try await post(h, http, Self.body(key: key)) == (201, "stored"))
            #expect(try await post(h, http, Self.body(amount: "99.00", key: key)) == (200, "duplicate"))
            #expect(try await post(h, http, Self.body(amount: nil, currency: nil, key: "open-1", extra: ["event": "app_open"])) == (201, "stored"))
            #expect(try await post(h, http, Self.body(amount: 30, key: "whole")) == (201, "stored"))
            let cases: [(String, String?, String, Int, String)] = [
                ("no token", nil, Self.body(), 401, "bad_app_token"),
                ("another user", "bob", Self.body(), 403, "user_mismatch"),
                ("unknown user", "carol", Self.body(user: "carol"), 404, "unknown_user"),
                ("bad JSON", "alice", "{", 400, "malformed_json"),
                ("unknown key", "alice", Self.body(extra: ["coupon": "X"]), 400, "malformed_json"),
                ("event with spaces", "alice", Self.body(event: "made a purchase"), 422, "bad_event"),
                ("amount as a float", "alice", Self.body(amount: 12.5), 422, "bad_amount"),
                ("three decimals", "alice", Self.body(amount: "1.005"), 422, "bad_amount"),
                ("lowercase currency", "alice", Self.body(currency: "eur"), 422, "bad_currency"),
                ("currency without amount", "alice", Self.body(amount: nil), 422, "bad_currency"),
                ("bad time", "alice", Self.body(extra: ["occurred_at": "yesterday"]), 422, "bad_time"),
                ("too large", "alice", String(repeating: " ", count: 5_000), 413, "body_too_large"),
            ]
            for (what, user, body, status, code) in cases {
                let answer = try await post(h, http, body, as: user)
                #expect(answer == (status, code), "\(what): \(answer)")
            }
            #expect(try await post(h, http, Self.body(), contentType: "text/plain") == (415, "unsupported_media_type"))
            #expect(try await h.db.scalar("""
                SELECT string_agg(event || ' ' || coalesce(amount::text, '-') || ' ' || coalesce(currency, '-') || ' ' || source, ', ' ORDER BY id)
                FROM conversions
                """, as: String.self) == "purchase 12.50 EUR api, app_open - - api, purchase 30.00 EUR api")
        }
    }

    @Test func aFileIsLoadedOnceAndItsBadLinesAreNamed() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec("INSERT INTO users (external_id, time_zone) VALUES ('alice', 'UTC')")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("conversions-\(UUID()).jsonl")
            defer { try? FileManager.default.removeItem(at: file) }
            let lines = [Self.body(key: "a"), Self.body(key: "b"), "", Self.body(key: "a"), Self.body(user: "zed", key: "c"),
                         "{\"user\": 1}", Self.body(event: "bad event", key: "d")]
            try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
            let ingest = ConversionIngest(store: ConversionStore(client: client, logger: TestDatabase.logger))
            let first = try await ingest.ingest(file: file.path, batch: 3)
            #expect(first.lines == 6 && first.stored == 2 && first.duplicates == 1)
            #expect(first.bad.map { "\($0.line):\($0.code)" }.sorted() == ["5:unknown_user", "6:malformed_json", "7:bad_event"])
            let again = try await ingest.ingest(file: file.path)
            #expect(again.stored == 0 && again.duplicates == 3)
            #expect(try await client.scalar("SELECT count(*) FROM conversions WHERE source = 'ingest'", as: Int64.self) == 2)
        }
    }
}
