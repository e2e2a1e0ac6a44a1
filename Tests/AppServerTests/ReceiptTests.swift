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

/// Delivery receipts (contract 8): the bodies ExtensionKit builds, stored
/// once per delivery, refused one by one, and counted as delivered.
@Suite("Delivery receipts (contract 8)")
struct ReceiptTests {
    static let kit = ReceiptRequestBuilder(baseURL: URL(string: "https://herald.example.com")!)

    static func receipt(_ delivery: Int64, token: String? = nil, at: Date = Date(), sealed: Bool? = nil,
                        media: Bool? = nil) -> Receipt {
        Receipt(delivery: delivery, token: token ?? IntakeTests.tokens.token(delivery: delivery), arrivedAt: at,
                sealedOpened: sealed, mediaAttached: media)
    }

    func post(_ client: some TestClientProtocol, _ body: Data) async throws -> (Int, [String: Any]) {
        try await client.execute(uri: "/v1/receipts", method: .post, headers: [.contentType: "application/json"],
                                 body: ByteBuffer(bytes: body)) { response in
            let object = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
            return (response.status.code, object)
        }
    }

    @Test func theKitsBodyIsStoredOnceAndEachBadReceiptIsRefusedAlone() async throws {
        try await withIntake { intake, db in
            let app = Application(router: AppHTTPServer.router(intake: intake))
            try await app.test(.live) { client in
                let request = try Self.kit.request([
                    Self.receipt(1, sealed: nil, media: true),
                    Self.receipt(2, token: "forged-token-of-22chars"),
                    Self.receipt(3, at: Date().addingTimeInterval(3600)),
                    Self.receipt(404),
                    Self.receipt(3, sealed: false),
                ])
                #expect(request.url.absoluteString == "https://herald.example.com/v1/receipts" && request.method == "POST")
                let (status, answer) = try await post(client, request.body)
                #expect(status == 200)
                #expect(answer["stored"] as? Int == 2 && answer["duplicates"] as? Int == 0)
                let refused = (answer["refused"] as? [[String: Any]] ?? []).map { "\($0["index"] ?? "?"):\($0["error"] ?? "?")" }
                #expect(refused == ["1:bad_token", "2:bad_time", "3:unknown_delivery"])
                // A retry stores nothing twice; the first arrival is kept.
                let again = try await post(client, try Self.kit.request([Self.receipt(1, sealed: true), Self.receipt(3)]).body)
                #expect(again.0 == 200 && again.1["stored"] as? Int == 0 && again.1["duplicates"] as? Int == 2)
                #expect(try await db.scalar("""
                    SELECT count(*) = 2 AND bool_and(media_attached IS NOT DISTINCT FROM (CASE delivery_id WHEN 1 THEN true END))
                       AND bool_and(sealed_opened IS NOT DISTINCT FROM (CASE delivery_id WHEN 3 THEN false END))
                    FROM receipts
                    """, as: Bool.self) == true)
                // Malformed bodies: 400, naming the problem.
                for body in [#"{"receipts":[]}"#, #"{"receipts":[{"delivery":1}]}"#, #"[]"#,
                             #"{"receipts":[{"delivery":1,"token":"t","arrived_at":"now"}]}"#,
                             #"{"receipts":[{"delivery":1,"token":"t","arrived_at":"2026-11-20T10:00:00Z","extra":1}]}"#] {
                    let (code, error) = try await post(client, Data(body.utf8))
                    #expect(code == 400 && error["error"] as? String == "malformed_json", "\(body): \(code) \(error)")
                }
                let many = try Self.kit.request((0..<60).map { _ in Self.receipt(1) })
                #expect(try await post(client, many.body).1["duplicates"] as? Int == 50, "the kit sends at most 50")
            }
        }
    }

    @Test func deliveredCountsReceiptsAndRepliesBesideSent() async throws {
        try await withIntake { intake, db in
            // Delivery 1 has a receipt 4 s after it was sent; 3 only a reply; the
            // feedback's 2 neither (sent, never shown).
            try await db.exec("UPDATE deliveries SET sent_at = now() - interval '10 seconds'")
            let store = ReceiptStore(client: db, logger: TestDatabase.logger)
            _ = try await store.store([Self.receipt(1, at: Date().addingTimeInterval(-6), media: true)])
            let reply = try await intake.submit(Array(IntakeTests.reply(delivery: 3, action: "love_it").utf8))
            #expect((try? reply.get()) == .stored)
            let rows = try await db.query("""
                SELECT name, sent, delivered, delivered_pct::float8, receipts, arrival_median_s::float8, media_attached
                FROM analyst.delivery_confirmation ORDER BY campaign_id
                """, logger: TestDatabase.logger)
            var seen: [String] = []
            for try await (name, sent, delivered, pct, receipts, median, media) in rows.decode(
                (String, Int64, Int64, Double?, Int64, Double?, Int64).self) {
                seen.append("\(name) sent \(sent) delivered \(delivered) (\(pct ?? -1)%) receipts \(receipts) media \(media)")
                if name == "Poster" { #expect(median.map { abs($0 - 4) < 1.5 } == true, "\(median ?? -1)") }
            }
            #expect(seen == ["Poster sent 2 delivered 2 (100.0%) receipts 1 media 1",
                             "Feedback sent 1 delivered 0 (0.0%) receipts 0 media 0"])
        }
    }
}
