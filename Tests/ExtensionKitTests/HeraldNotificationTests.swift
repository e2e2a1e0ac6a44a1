import ExtensionKit
import Foundation
import Testing
import TestVectors

@Suite("Reading a Herald notification (contract 2)")
struct HeraldNotificationTests {
    /// The payload of contract 2, with the envelope of the first sealed-envelope vector.
    static let golden = #"""
    {
      "aps": {
        "alert": { "title": "Flash sale", "subtitle": "Two hours only", "body": "Reserve yours" },
        "sound": "default",
        "category": "flash_sale.v1",
        "thread-id": "campaign-42",
        "mutable-content": 1,
        "interruption-level": "time-sensitive",
        "relevance-score": 0.8
      },
      "herald": {
        "c": 42,
        "d": 918273,
        "k": "flash_sale",
        "media": { "url": "https://cdn.example.com/p/42.gif", "type": "gif" },
        "r": "UTG3JXNbLl8qh3Nzh1Gd1w",
        "sealed": {
          "v": 1,
          "kid": "dev-918273",
          "enc": "pUXiZRZPGDmq5NpiKb75gQxd9oqBfgqk71Cp5OdRn24=",
          "ct": "zVhizn2QJggPMTY+MJ2AVzdyQaZeZLDZXShFzA5L6IUjiN2yBthm+xcx9UVdQ1NVXKst9+rh"
        },
        "x": { "landing": "shop/sale/42", "rank": 3, "vip": true, "tier": "gold" }
      }
    }
    """#

    static let expected = HeraldNotification(
        campaign: 42,
        delivery: 918_273,
        kind: .flashSale,
        replyToken: "UTG3JXNbLl8qh3Nzh1Gd1w",
        media: .init(url: URL(string: "https://cdn.example.com/p/42.gif")!, type: "gif"),
        sealed: SealedEnvelope(
            v: 1,
            kid: "dev-918273",
            enc: "pUXiZRZPGDmq5NpiKb75gQxd9oqBfgqk71Cp5OdRn24=",
            ct: "zVhizn2QJggPMTY+MJ2AVzdyQaZeZLDZXShFzA5L6IUjiN2yBthm+xcx9UVdQ1NVXKst9+rh"
        ),
        custom: ["landing": "shop/sale/42", "tier": "gold"],
        category: "flash_sale.v1"
    )

    @Test func parsesTheGoldenPayloadFromJSON() throws {
        let notification = try HeraldNotification(json: Data(Self.golden.utf8))
        #expect(notification == Self.expected)
    }

    @Test func parsesTheGoldenPayloadFromUserInfo() throws {
        // What UNNotificationContent.userInfo holds: the payload as objects.
        let userInfo = try #require(
            JSONSerialization.jsonObject(with: Data(Self.golden.utf8)) as? [AnyHashable: Any]
        )
        #expect(try HeraldNotification(userInfo: userInfo) == Self.expected)
    }

    @Test func parsesAUserInfoBuiltFromSwiftValues() throws {
        let userInfo: [AnyHashable: Any] = [
            "aps": ["alert": ["body": "What did you think?"], "category": "feedback.v1"],
            "herald": ["c": Int64(123_456_789), "d": Int64(9_876_543_210), "k": "feedback", "r": "2P-UkdGhMuGK3ap2mctUQA"],
        ]
        let notification = try HeraldNotification(userInfo: userInfo)
        #expect(notification == HeraldNotification(
            campaign: 123_456_789, delivery: 9_876_543_210, kind: .feedback,
            replyToken: "2P-UkdGhMuGK3ap2mctUQA", category: "feedback.v1"
        ))
    }

    @Test func theSealedFieldsOfAParsedNotificationOpen() throws {
        let notification = try HeraldNotification(json: Data(Self.golden.utf8))
        let vector = try SealedEnvelopeVectors.load()[0]
        let key = try #require(Data(base64Encoded: vector.device_private_key))
        let opener = EnvelopeOpener(privateKey: try .init(rawRepresentation: key))
        #expect(try opener.sealedFields(in: notification) == ["coupon": "FLASH-7Q2K", "price": "¥99"])

        var moved = notification
        moved.delivery += 1
        #expect(throws: OpenError.wrongKeyOrTampered) { try opener.sealedFields(in: moved) }

        moved.sealed = nil
        #expect(try opener.sealedFields(in: moved) == nil)
    }

    @Test func aMinimalPosterPayload() throws {
        let json = #"{"aps":{"alert":{"body":"New poster"},"mutable-content":1},"herald":{"c":1,"d":2,"k":"poster","media":{"url":"https://cdn.example.com/p/1.png","type":"png"}}}"#
        let notification = try HeraldNotification(json: Data(json.utf8))
        #expect(notification.kind == .poster)
        #expect(notification.media?.type == "png")
        #expect(notification.replyToken == nil)
        #expect(notification.sealed == nil)
        #expect(notification.category == nil)
        #expect(notification.custom.isEmpty)
    }

    @Test func anUnknownKindIsKept() throws {
        let json = #"{"herald":{"c":1,"d":2,"k":"quiz"}}"#
        #expect(try HeraldNotification(json: Data(json.utf8)).kind.rawValue == "quiz")
    }

    @Test func aPushFromElsewhereIsNotHerald() {
        #expect(throws: NotificationParseError.notHerald) {
            try HeraldNotification(json: Data(#"{"aps":{"alert":"hello"}}"#.utf8))
        }
        #expect(throws: NotificationParseError.notHerald) {
            try HeraldNotification(userInfo: ["aps": ["alert": "hello"]])
        }
    }

    @Test func notJSON() {
        for text in ["", "not json", "[1,2]", "42"] {
            #expect(throws: NotificationParseError.notJSON, "\(text)") {
                try HeraldNotification(json: Data(text.utf8))
            }
        }
        #expect(throws: NotificationParseError.notJSON) {
            try HeraldNotification(userInfo: ["herald": Date()])
        }
    }

    @Test func malformedHeraldSections() throws {
        let cases = [
            #"{"herald":{"d":2,"k":"poster"}}"#,
            #"{"herald":{"c":"1","d":2,"k":"poster"}}"#,
            #"{"herald":{"c":1,"d":2.5,"k":"poster"}}"#,
            #"{"herald":{"c":1,"d":null,"k":"poster"}}"#,
            #"{"herald":{"c":1,"d":2,"k":"poster","media":{"url":"https://x/a.gif"}}}"#,
            #"{"herald":{"c":1,"d":2,"k":"poster","sealed":{"v":1,"kid":"k","enc":"AA=="}}}"#,
            #"{"herald":{"c":1,"d":2,"k":"poster","x":["a"]}}"#,
            #"{"herald":"yes"}"#,
        ]
        for json in cases {
            #expect(throws: NotificationParseError.malformed, "\(json)") {
                try HeraldNotification(json: Data(json.utf8))
            }
        }
    }

    @Test func theMessageNamesTheFieldButNotItsValue() throws {
        let json = #"{"herald":{"c":1,"d":"secret-looking-value","k":"poster"}}"#
        do {
            _ = try HeraldNotification(json: Data(json.utf8))
            Issue.record("expected a parse error")
        } catch {
            #expect(error.description.contains("herald.d"))
            #expect(!error.description.contains("secret-looking-value"))
        }
    }
}
