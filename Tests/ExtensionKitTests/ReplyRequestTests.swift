import ExtensionKit
import Foundation
import Testing

@Suite("Building reply requests (contract 4)")
struct ReplyRequestTests {
    static let notification = HeraldNotification(
        campaign: 42, delivery: 918_273, kind: .flashSale,
        replyToken: "UTG3JXNbLl8qh3Nzh1Gd1w", category: "flash_sale.v1"
    )
    static let occurredAt = Date(timeIntervalSince1970: 1_795_168_800) // 2026-11-20T10:00:00Z
    static let replyID = UUID(uuidString: "5B0D3A5E-8F3C-4A8E-9C51-2E7B0F4C6D21")!

    private func object(_ data: Data) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func theRequestHasTheContractsShape() throws {
        let builder = ReplyRequestBuilder(baseURL: URL(string: "https://push.example.com")!)
        let request = try builder.request(
            for: Self.notification, action: "comment", text: "Loved it — très bien 👍",
            occurredAt: Self.occurredAt, replyID: Self.replyID
        )
        #expect(request.url.absoluteString == "https://push.example.com/v1/replies")
        #expect(request.method == "POST")
        #expect(request.value(forHeader: "Content-Type") == "application/json")

        let body = try object(request.body)
        #expect(Set(body.keys) == ["delivery", "token", "action", "text", "occurred_at", "reply_id"])
        #expect((body["delivery"] as? NSNumber)?.int64Value == 918_273)
        #expect(body["token"] as? String == "UTG3JXNbLl8qh3Nzh1Gd1w")
        #expect(body["action"] as? String == "comment")
        #expect(body["text"] as? String == "Loved it — très bien 👍")
        #expect(body["occurred_at"] as? String == "2026-11-20T10:00:00Z")
        #expect(body["reply_id"] as? String == "5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21")
    }

    @Test func theExactBytesOfAButtonReply() throws {
        let builder = ReplyRequestBuilder(baseURL: URL(string: "https://push.example.com")!)
        let request = try builder.request(
            for: Self.notification, action: "reserve",
            occurredAt: Self.occurredAt.addingTimeInterval(0.75), replyID: Self.replyID
        )
        let expected = #"{"action":"reserve","delivery":918273,"occurred_at":"2026-11-20T10:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21","token":"UTG3JXNbLl8qh3Nzh1Gd1w"}"#
        #expect(String(decoding: request.body, as: UTF8.self) == expected)
    }

    @Test func theSystemActionsAreTheIOSIdentifiers() throws {
        #expect(ReplyAction.defaultActionIdentifier == "com.apple.UNNotificationDefaultActionIdentifier")
        #expect(ReplyAction.dismissActionIdentifier == "com.apple.UNNotificationDismissActionIdentifier")
        let builder = ReplyRequestBuilder(baseURL: URL(string: "https://push.example.com")!)
        let request = try builder.request(
            for: Self.notification, action: ReplyAction.dismissActionIdentifier,
            occurredAt: Self.occurredAt, replyID: Self.replyID
        )
        #expect(try object(request.body)["action"] as? String == "com.apple.UNNotificationDismissActionIdentifier")
    }

    @Test(arguments: [
        ("https://example.com", "https://example.com/v1/replies"),
        ("https://example.com/", "https://example.com/v1/replies"),
        ("https://example.com/herald", "https://example.com/herald/v1/replies"),
        ("https://example.com/herald/", "https://example.com/herald/v1/replies"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/replies"),
    ])
    func theEndpointSitsUnderTheBaseURL(base: String, endpoint: String) throws {
        let builder = ReplyRequestBuilder(baseURL: try #require(URL(string: base)))
        #expect(builder.endpoint.absoluteString == endpoint)
    }

    @Test func aNotificationWithoutReplyTokenTakesNoReply() {
        var notification = Self.notification
        notification.replyToken = nil
        let builder = ReplyRequestBuilder(baseURL: URL(string: "https://push.example.com")!)
        #expect(throws: ReplyRequestError.noReplyToken) {
            try builder.request(for: notification, action: "reserve", occurredAt: Self.occurredAt, replyID: Self.replyID)
        }
        #expect(throws: ReplyRequestError.emptyAction) {
            try builder.request(for: Self.notification, action: "", occurredAt: Self.occurredAt, replyID: Self.replyID)
        }
    }

    @Test func theBodyRoundTrips() throws {
        let body = ReplyBody(
            delivery: 9_876_543_210, token: "2P-UkdGhMuGK3ap2mctUQA", action: "comment",
            text: "ok", occurredAt: Date(timeIntervalSince1970: 1_795_168_800.9), replyID: Self.replyID
        )
        #expect(body.occurredAt == Self.occurredAt)
        for encoder in [JSONEncoder(), Self.iso8601Encoder()] {
            let decoded = try JSONDecoder().decode(ReplyBody.self, from: encoder.encode(body))
            #expect(decoded == body)
        }
    }

    private static func iso8601Encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        return encoder
    }

    @Test func decodingAcceptsTheContractsExample() throws {
        let json = #"{ "delivery": 918273, "token": "UTG3JXNbLl8qh3Nzh1Gd1w", "action": "reserve", "text": "optional typed text", "occurred_at": "2026-11-20T10:00:00Z", "reply_id": "5B0D3A5E-8F3C-4A8E-9C51-2E7B0F4C6D21" }"#
        let body = try JSONDecoder().decode(ReplyBody.self, from: Data(json.utf8))
        #expect(body == ReplyBody(
            delivery: 918_273, token: "UTG3JXNbLl8qh3Nzh1Gd1w", action: "reserve",
            text: "optional typed text", occurredAt: Self.occurredAt, replyID: Self.replyID
        ))
    }

    @Test(arguments: [
        ("2026-11-20T10:00:00Z", 1_795_168_800.0),
        ("2026-11-20t10:00:00z", 1_795_168_800.0),
        ("2026-11-20T10:00:00.123456Z", 1_795_168_800.0),
        ("2026-11-20T19:00:00+09:00", 1_795_168_800.0),
        ("2026-11-20T05:30:00-04:30", 1_795_168_800.0),
        ("1970-01-01T00:00:00Z", 0.0),
        ("2024-02-29T23:59:59Z", 1_709_251_199.0),
        ("1969-12-31T23:59:59Z", -1.0),
    ])
    func occurredAtAcceptsRFC3339(text: String, seconds: Double) throws {
        let json = #"{"delivery":1,"token":"t","action":"a","occurred_at":"\#(text)","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#
        let body = try JSONDecoder().decode(ReplyBody.self, from: Data(json.utf8))
        #expect(body.occurredAt.timeIntervalSince1970 == seconds)
    }

    @Test func occurredAtIsWrittenInUTCWholeSeconds() throws {
        let dates: [(Double, String)] = [
            (0, "1970-01-01T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_709_251_199.999, "2024-02-29T23:59:59Z"),
            (4_102_444_800, "2100-01-01T00:00:00Z"),
        ]
        for (seconds, text) in dates {
            let body = ReplyBody(delivery: 1, token: "t", action: "a", occurredAt: Date(timeIntervalSince1970: seconds), replyID: Self.replyID)
            #expect(try object(JSONEncoder().encode(body))["occurred_at"] as? String == text)
        }
    }

    @Test(arguments: [
        #"{"delivery":"918273","token":"t","action":"a","occurred_at":"2026-11-20T10:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"delivery":918273.5,"token":"t","action":"a","occurred_at":"2026-11-20T10:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"token":"t","action":"a","occurred_at":"2026-11-20T10:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"delivery":1,"action":"a","occurred_at":"2026-11-20T10:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"delivery":1,"token":"t","action":"a","text":7,"occurred_at":"2026-11-20T10:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"delivery":1,"token":"t","action":"a","occurred_at":"2026-11-20 10:00:00","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"delivery":1,"token":"t","action":"a","occurred_at":"2026-02-30T10:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"delivery":1,"token":"t","action":"a","occurred_at":"2026-11-20T24:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"delivery":1,"token":"t","action":"a","occurred_at":"2026-11-20T10:00:00","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"delivery":1,"token":"t","action":"a","occurred_at":1795168800,"reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#,
        #"{"delivery":1,"token":"t","action":"a","occurred_at":"2026-11-20T10:00:00Z","reply_id":"not-a-uuid"}"#,
        #"{"delivery":1,"token":"t","action":"a","occurred_at":"2026-11-20T10:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21","txt":"typo"}"#,
        #"[1]"#,
    ])
    func decodingIsStrict(json: String) {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ReplyBody.self, from: Data(json.utf8))
        }
    }

    @Test func nullTextIsNoText() throws {
        let json = #"{"delivery":1,"token":"t","action":"a","text":null,"occurred_at":"2026-11-20T10:00:00Z","reply_id":"5b0d3a5e-8f3c-4a8e-9c51-2e7b0f4c6d21"}"#
        #expect(try JSONDecoder().decode(ReplyBody.self, from: Data(json.utf8)).text == nil)
    }
}
