import ExtensionKit
import Foundation
import Testing

@Suite("The app's side: config refresh push, registration and config requests (contracts 5–7)")
struct AppConfigTests {
    static let refresh = #"{"aps":{"content-available":1},"herald":{"config":"\"84a93d7572a8547b87d78e1d\""}}"#

    @Test func recognisesTheConfigRefreshPush() throws {
        let push = try #require(HeraldConfigRefresh(json: Data(Self.refresh.utf8)))
        #expect(push.etag == #""84a93d7572a8547b87d78e1d""#)
        // From a userInfo dictionary as iOS delivers it.
        let userInfo: [AnyHashable: Any] = ["aps": ["content-available": 1], "herald": ["config": "\"abc\""]]
        #expect(HeraldConfigRefresh(userInfo: userInfo)?.etag == "\"abc\"")
        // The app fetches only when the ETag is not the one it registered (quotes and W/ aside).
        #expect(push.isNewer(than: nil))
        #expect(!push.isNewer(than: #""84a93d7572a8547b87d78e1d""#))
        #expect(!push.isNewer(than: #"W/"84a93d7572a8547b87d78e1d""#))
        #expect(push.isNewer(than: #""0000""#))
    }

    @Test func otherPushesAreNotConfigRefreshes() {
        let others = [
            HeraldNotificationTests.golden,                                                  // a campaign notification
            #"{"aps":{"content-available":1}}"#,                                             // another provider's background push
            #"{"aps":{"alert":"hi","content-available":1},"herald":{"config":"\"x\""}}"#,   // has an alert
            #"{"aps":{"content-available":0},"herald":{"config":"\"x\""}}"#,
            #"{"aps":{"content-available":1},"herald":{"config":""}}"#,
            "not json",
        ]
        for text in others {
            #expect(HeraldConfigRefresh(json: Data(text.utf8)) == nil, "\(text.prefix(60))")
        }
    }

    @Test func buildsTheRegistrationRequest() throws {
        let builder = AppRequestBuilder(baseURL: try #require(URL(string: "https://herald.example.com/base")))
        let token = Data([0xAB, 0x01] + Array(repeating: 0x00, count: 30))
        let request = builder.register(deviceToken: token, .init(
            environment: "production", user: "alice", locale: "fr-CA", timeZone: "America/Toronto", appVersion: "3.1",
            publicKey: "vCfBN+h/76CcprZdH3tIskOOysQD3h+jrpVUG8pKCl8=", keyID: "phone-1", attributes: ["plan": "pro"],
            marketing: false, configETag: "\"abc\""), bearer: "eyJ.test.jwt")
        #expect(request.method == "PUT")
        #expect(request.url.absoluteString == "https://herald.example.com/base/v1/devices/ab01" + String(repeating: "00", count: 30))
        #expect(request.value(forHeader: "authorization") == "Bearer eyJ.test.jwt")
        #expect(request.value(forHeader: "content-type") == "application/json")
        let body = try #require(try JSONSerialization.jsonObject(with: request.body) as? [String: Any])
        #expect(body.keys.sorted() == ["app_version", "attributes", "config_etag", "environment", "key_id", "locale",
                                       "marketing", "public_key", "time_zone", "user"])
        #expect(body["marketing"] as? Bool == false)
        #expect(body["config_etag"] as? String == "\"abc\"")
        // Fields left out stay out (the server keeps what it had).
        let minimal = builder.register(deviceTokenHex: "AB" + String(repeating: "0", count: 62), .init(environment: "sandbox", user: "bob"), bearer: "t")
        let minimalBody = try #require(try JSONSerialization.jsonObject(with: minimal.body) as? [String: Any])
        #expect(minimalBody.keys.sorted() == ["environment", "user"])
        #expect(minimal.url.lastPathComponent == "ab" + String(repeating: "0", count: 62))

        let logout = builder.unregister(deviceTokenHex: "ab" + String(repeating: "0", count: 62), bearer: "t")
        #expect(logout.method == "DELETE")
        #expect(logout.body.isEmpty)
    }

    @Test func buildsTheConfigRequestAndReadsTheDocument() throws {
        let builder = AppRequestBuilder(baseURL: try #require(URL(string: "https://herald.example.com")))
        let request = builder.notificationConfig(locale: "zh-Hans", registeredETag: "\"abc\"")
        #expect(request.method == "GET")
        #expect(request.url.absoluteString == "https://herald.example.com/v1/notification-config?locale=zh-Hans")
        #expect(request.value(forHeader: "if-none-match") == "\"abc\"")
        #expect(request.value(forHeader: "accept-language") == "zh-Hans")
        let companion = AppRequestBuilder(baseURL: try #require(URL(string: "https://herald.example.com")), app: "companion")
        #expect(companion.notificationConfig(locale: "fr", registeredETag: nil).url.absoluteString
            == "https://herald.example.com/v1/notification-config?app=companion&locale=fr")

        let json = #"""
        {"NotificationConfig":{"UNNotificationAction":{
            "comment":{"identifier":"comment","options":0,"textInput":{"buttonTitle":"发送","placeholder":"说说你的想法"},"title":"告诉我们"},
            "reserve":{"identifier":"reserve","options":4,"title":"立即预订"}},
          "UNNotificationCategory":{"flash_sale.v1":{"actions":["reserve"],"identifier":"flash_sale.v1","options":0},
            "feedback.v1":{"actions":["comment"],"identifier":"feedback.v1","options":1}}}}
        """#
        let document = try NotificationConfigDocument(json: Data(json.utf8), etag: "\"abc\"")
        #expect(document.categories["feedback.v1"]?.options == 1)
        #expect(document.categories["flash_sale.v1"]?.actions == ["reserve"])
        #expect(document.actions["reserve"]?.title == "立即预订")
        #expect(document.actions["reserve"]?.textButtonTitle == nil)
        #expect(document.actions["comment"]?.textButtonTitle == "发送")
        #expect(document.actions["comment"]?.textPlaceholder == "说说你的想法")
        #expect(throws: NotificationConfigDocument.ParseError.self) {
            try NotificationConfigDocument(json: Data(#"{"categories":[]}"#.utf8), etag: nil)
        }
    }
}
