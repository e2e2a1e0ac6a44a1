import ExtensionKit
import Foundation
import HeraldCore
import Testing

@Suite("Payloads (contract 2)")
struct PayloadTests {
    static let target = DeliveryTarget(
        deliveryID: 918273, deviceToken: String(repeating: "ab", count: 32), environment: .production,
        locale: "en-US", apnsID: UUID(uuidString: "6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5F")!)

    static let poster = Campaign(
        id: 42, name: "Autumn poster", kind: .poster,
        content: ["en": LocalizedText(title: "Autumn is here", body: "Our new collection just landed."),
                  "zh-Hans": LocalizedText(title: "秋天来了", body: "新品已上架。")],
        mediaURL: "https://cdn.example.com/p/42.gif", mediaType: "gif", categoryID: "poster.v1")

    static let flashSale = Campaign(
        id: 42, name: "Flash", kind: .flashSale,
        content: ["en": LocalizedText(title: "Flash sale", subtitle: "2 hours only", body: "Reserve now")],
        categoryID: "flash_sale.v1", custom: ["sku": .string("A-42")],
        sensitive: ["coupon": .string("FLASH-7Q2K")],
        expiresAt: Date(timeIntervalSince1970: 1_795_000_000), collapseID: "flash-42", relevanceScore: 0.8)

    static let feedback = Campaign(
        id: 7, name: "Feedback", kind: .feedback,
        content: ["en": LocalizedText(title: "How was your order?", body: "Tell us in a few words.")],
        categoryID: "feedback.v1", priority: 5)

    @Test func posterGolden() throws {
        let bytes = try PayloadBuilder(campaign: Self.poster).payload(for: Self.target, replyToken: nil, sealed: nil)
        let golden = #"{"aps":{"alert":{"title":"Autumn is here","body":"Our new collection just landed."},"sound":"default","category":"poster.v1","thread-id":"campaign-42","mutable-content":1},"herald":{"c":42,"d":918273,"k":"poster","media":{"url":"https://cdn.example.com/p/42.gif","type":"gif"}}}"#
        #expect(String(decoding: bytes, as: UTF8.self) == golden)
    }

    @Test func flashSaleGolden() throws {
        let sealed = SealedEnvelope(v: 1, kid: "dev-918273", enc: "pUXiZRZPGDmq5NpiKb75gQxd9oqBfgqk71Cp5OdRn24=", ct: "zVhizn2QJggP")
        let builder = try PayloadBuilder(campaign: Self.flashSale)
        let bytes = try builder.payload(for: Self.target, replyToken: "UTG3JXNbLl8qh3Nzh1Gd1w", sealed: sealed)
        let golden = #"{"aps":{"alert":{"title":"Flash sale","subtitle":"2 hours only","body":"Reserve now"},"sound":"default","category":"flash_sale.v1","thread-id":"campaign-42","mutable-content":1,"interruption-level":"time-sensitive","relevance-score":0.8},"herald":{"c":42,"d":918273,"k":"flash_sale","r":"UTG3JXNbLl8qh3Nzh1Gd1w","sealed":{"v":1,"kid":"dev-918273","enc":"pUXiZRZPGDmq5NpiKb75gQxd9oqBfgqk71Cp5OdRn24=","ct":"zVhizn2QJggP"},"x":{"sku":"A-42"}}}"#
        #expect(String(decoding: bytes, as: UTF8.self) == golden)

        let headers = builder.headers(for: Self.target, topic: "com.example.app")
        #expect(headers.fields.map { "\($0.name): \($0.value)" } == [
            "apns-topic: com.example.app", "apns-push-type: alert", "apns-priority: 10",
            "apns-expiration: 1795000000", "apns-collapse-id: flash-42",
            "apns-id: 6f1b5c2e-8c1d-4e0a-9b77-2a9c1f3d4e5f",
        ])
    }

    @Test func feedbackGolden() throws {
        let builder = try PayloadBuilder(campaign: Self.feedback)
        let bytes = try builder.payload(for: Self.target, replyToken: "VZUBJI8rYEBPXU6YVao7Tw", sealed: nil)
        let golden = #"{"aps":{"alert":{"title":"How was your order?","body":"Tell us in a few words."},"sound":"default","category":"feedback.v1","thread-id":"campaign-7"},"herald":{"c":7,"d":918273,"k":"feedback","r":"VZUBJI8rYEBPXU6YVao7Tw"}}"#
        #expect(String(decoding: bytes, as: UTF8.self) == golden)
        let headers = builder.headers(for: Self.target, topic: "t")
        #expect(headers.priority == 5)
        #expect(headers.expiration == nil)
        #expect(headers.collapseID == "herald-7")
    }

    @Test func payloadIsValidJSONWithEscapes() throws {
        var c = Self.feedback
        c.content = ["en": LocalizedText(title: "Say \"hi\"\n\tto 👋 & </script>", body: "back\\slash \u{01}")]
        let bytes = try PayloadBuilder(campaign: c).payload(for: Self.target, replyToken: nil, sealed: nil)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let aps = try #require(object["aps"] as? [String: Any])
        let alert = try #require(aps["alert"] as? [String: String])
        #expect(alert["title"] == "Say \"hi\"\n\tto 👋 & </script>")
        #expect(alert["body"] == "back\\slash \u{01}")
    }

    @Test(arguments: [
        ("zh-Hans-CN", "zh-Hans"), ("zh_Hans", "zh-Hans"), ("zh", "zh-Hans"), ("en-GB", "en"),
        ("fr-FR", "en"), ("ZH-hans", "zh-Hans"),
    ])
    func localeFallback(device: String, expected: String) {
        #expect(Self.poster.contentLocale(for: device) == expected)
    }

    /// The payload builder resolves locales through a table made once per
    /// campaign; it picks what `contentLocale` picks, for every kind of tag.
    @Test(arguments: ["zh-Hans-CN", "zh_Hans", "zh", "en-GB", "fr-FR", "ZH-hans", "EN_us", "de", "", "-", "zh-", "ñu-ES", "İs"])
    func payloadsShowTheTextContentLocaleChooses(device: String) throws {
        var t = Self.target
        t.locale = device
        var exact = Self.target
        exact.locale = Self.poster.contentLocale(for: device)
        #expect(Self.poster.content[exact.locale] != nil)
        let builder = try PayloadBuilder(campaign: Self.poster)
        #expect(try builder.payload(for: t, replyToken: nil, sealed: nil) == builder.payload(for: exact, replyToken: nil, sealed: nil))
    }

    @Test(arguments: ["en", "EN_us", "zh_Hant_TW", "zh-Hans", "a_B-c", "ñu_ES", "İs", "ǅ_x", ""])
    func normalizingWithoutFoundationMatchesFoundation(tag: String) {
        #expect(LocaleMatch.normalize(tag) == tag.replacingOccurrences(of: "_", with: "-").lowercased())
    }

    @Test func languageMatchBeforeDefault() throws {
        var c = Self.poster
        c.content["pt-BR"] = LocalizedText(title: "Outono", body: "…")
        #expect(c.contentLocale(for: "pt-PT") == "pt-BR")
        #expect(c.contentLocale(for: "pt") == "pt-BR")
    }

    @Test func deviceLocaleChoosesText() throws {
        var t = Self.target
        t.locale = "zh-Hans-CN"
        let bytes = try PayloadBuilder(campaign: Self.poster).payload(for: t, replyToken: nil, sealed: nil)
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""title":"秋天来了""#))
    }

    @Test func oversizeCampaignIsRefusedBeforeSending() throws {
        var c = Self.feedback
        c.content["fr"] = LocalizedText(title: "Long", body: String(repeating: "é", count: 2100))
        #expect(throws: CampaignProblem.self) {
            _ = try PreparedCampaign(campaign: c, segmentName: nil, segmentRule: .object([:]))
        }
        do throws(CampaignProblem) {
            _ = try PreparedCampaign(campaign: c, segmentName: nil, segmentRule: .object([:]))
        } catch {
            #expect(error.message.contains("locale \"fr\""))
            #expect(error.message.contains("4096"))
        }
    }

    @Test func worstCaseCountsTheSealedEnvelope() throws {
        // Plain text fits, but the sealed fields push the largest payload over the limit.
        var c = Self.flashSale
        c.content = ["en": LocalizedText(title: "T", body: String(repeating: "a", count: 3200))]
        c.sensitive = ["coupon": .string(String(repeating: "x", count: 600))]
        let plain = try PayloadBuilder(campaign: c).payload(for: Self.target, replyToken: nil, sealed: nil)
        #expect(plain.count < PayloadBuilder.maxBytes)
        #expect(throws: CampaignProblem.self) {
            _ = try PreparedCampaign(campaign: c, segmentName: nil, segmentRule: .object([:]))
        }
    }
}
