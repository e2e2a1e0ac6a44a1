import ExtensionKit
import Foundation
import HeraldCore
import Testing

@Suite("Templates (text made for each person)")
struct TemplateTests {
    static let cache = TemplateFormatCache()

    static func render(_ source: String, _ values: [String: String], locale: String = "en",
                       timeZone: String? = "Europe/Paris") throws -> String {
        let t = try Template(parsing: source)
        return try t.render(value: { values[$0.description] }, formats: TemplateFormats(locale: locale, timeZone: timeZone, cache: cache))
    }

    @Test func outputsAndFiltersAsLiquidWritesThem() throws {
        let v = ["user.first_name": "anna", "recipient.points": "1250", "recipient.day": "Sunday"]
        #expect(try Self.render("{{ user.first_name | capitalize }}, your {{ recipient.points | number }} points expire on {{recipient.day}}", v)
                == "Anna, your 1,250 points expire on Sunday")
        #expect(try Self.render("Hi {{ user.nickname | default: \"there\" }}", v) == "Hi there")
        #expect(try Self.render("Hi {{user.nickname|default:'there'}}", v) == "Hi there")
        #expect(try Self.render("{{ user.first_name | upcase }} {{ user.first_name | downcase }}", ["user.first_name": "ÄnNa"]) == "ÄNNA änna")
        #expect(try Self.render("{{ recipient.day | truncate: 4 }}", v) == "S...")
        #expect(try Self.render("{{ recipient.day | truncate: 4, \"…\" }}", v) == "Sun…")
        #expect(try Self.render("{{ recipient.day | truncate: 20 }}", v) == "Sunday")
        // default gives a value to an empty text too, as Liquid's does.
        #expect(try Self.render("{{ user.first_name | default: \"there\" }}", ["user.first_name": ""]) == "there")
        // Filters before a default pass nothing on; the default still gives its value.
        #expect(try Self.render("{{ user.x | upcase | default: \"there\" }}", [:]) == "there")
    }

    @Test func numbersMoneyAndDatesFollowTheDeviceLocaleAndTheUsersZone() throws {
        let v = ["recipient.points": "1250", "recipient.big": "-1250000.75", "recipient.price": "19.9",
                 "recipient.ends": "2026-12-06", "recipient.at": "2026-12-06T23:30:00Z"]
        #expect(try Self.render("{{ recipient.points | number }}", v, locale: "en") == "1,250")
        #expect(try Self.render("{{ recipient.points | number }}", v, locale: "fr") == "1\u{202F}250")
        #expect(try Self.render("{{ recipient.points | number }}", v, locale: "de") == "1.250")
        #expect(try Self.render("{{ recipient.big | number }}", v, locale: "en") == "-1,250,000.75")
        #expect(try Self.render("{{ recipient.big | number }}", v, locale: "de") == "-1.250.000,75")
        #expect(try Self.render("{{ recipient.price | money: \"EUR\" }}", v, locale: "en") == "€19.90")
        #expect(try Self.render("{{ recipient.price | money: \"EUR\" }}", v, locale: "de") == "19,90\u{A0}€")
        // A day is that day everywhere; a moment is shown in the user's zone.
        #expect(try Self.render("{{ recipient.ends | date: \"short\" }}", v, locale: "en", timeZone: "Pacific/Auckland") == "12/6/26")
        #expect(try Self.render("{{ recipient.at | date: \"short\" }}", v, locale: "fr", timeZone: "Europe/Paris") == "07/12/2026")
        #expect(try Self.render("{{ recipient.at | date: \"short\" }}", v, locale: "en", timeZone: "America/New_York") == "12/6/26")
    }

    @Test func aMissingVariableIsAMissNamingIt() throws {
        #expect(throws: TemplateMiss(variable: .init(root: .recipient, path: ["points"]), why: "has no value and no default")) {
            try Self.render("You have {{ recipient.points }} points", [:])
        }
        #expect(throws: TemplateMiss(variable: .init(root: .recipient, path: ["points"]), why: "is not a number (the number filter)")) {
            try Self.render("{{ recipient.points | number }}", ["recipient.points": "many"])
        }
        #expect(throws: TemplateMiss.self) { try Self.render("{{ recipient.ends | date: \"long\" }}", ["recipient.ends": "soon"]) }
    }

    /// Each parse error names its line and column and what is wrong.
    @Test(arguments: [
        ("Hi {{ user.first_name ", 1, 4, "\"{{\" is never closed with \"}}\""),
        ("Hi {{ first_name }}", 1, 7, "unknown variable \"first_name\": a variable starts with user., device., campaign. or recipient., or is code"),
        ("Hi\n  {{ user.name | shout }}", 2, 18, "unknown filter \"shout\": use default, upcase, downcase, capitalize, truncate, number, money or date"),
        ("{{ user }}", 1, 4, "\"user\" needs a field, such as user.first_name"),
        ("{{ device.model }}", 1, 4, "unknown variable \"device.model\": device has locale, app_version and time_zone"),
        ("{{ campaign.id }}", 1, 4, "unknown variable \"campaign.id\": campaign has name"),
        ("{% if user.vip %}VIP{% endif %}", 1, 1, "tags ({% … %}) are not supported; a template holds outputs ({{ … }}) only"),
        ("{{ user.name | default }}", 1, 16, "default takes one value, such as default: \"there\""),
        ("{{ user.name | truncate: \"x\" }}", 1, 16, "truncate takes a length, such as truncate: 20"),
        ("{{ recipient.p | money: \"euro\" }}", 1, 18, "money takes a currency code, such as money: \"EUR\""),
        ("{{ recipient.p | date: \"soon\" }}", 1, 18, "date takes \"short\", \"medium\", \"long\" or \"full\""),
        ("{{ user.name | default: \"x }}", 1, 30, "a text in quotes is never closed"),
        ("{{ user.name user.x }}", 1, 14, "expected \"|\" or \"}}\" after user.name, found \"u\""),
        ("{{- user.name }}", 1, 3, "whitespace control ({{- … -}}) is not supported"),
    ])
    func aTemplateThatDoesNotParseSaysWhereAndWhy(source: String, line: Int, column: Int, message: String) {
        #expect(throws: TemplateError(line: line, column: column, message: message)) { try Template(parsing: source) }
    }

    static let target = DeliveryTarget(
        deliveryID: 5, deviceToken: String(repeating: "ab", count: 32), environment: .production,
        locale: "fr-FR", apnsID: UUID(uuidString: "6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5F")!)

    static let personal = Campaign(
        id: 9, name: "Points", kind: .flashSale,
        content: ["en": LocalizedText(title: "{{ user.first_name | default: \"Hello\" }}, {{ recipient.points | number }} points",
                                      body: "Until {{ campaign.name }}"),
                  "fr": LocalizedText(title: "{{ user.first_name | default: \"Bonjour\" }}, {{ recipient.points | number }} points",
                                      body: "Langue {{ device.locale }}")],
        mediaURL: "https://cdn.example.com/{{ user.external_id }}.png",
        custom: ["who": .string("{{ user.external_id }}"), "fixed": .int(3)],
        sensitive: ["code": .string("{{ recipient.code }}")])

    @Test func aPayloadCarriesEachDevicesOwnValuesEscapedForJSON() throws {
        let builder = try PayloadBuilder(campaign: Self.personal)
        #expect(builder.variables.map(\.description)
                == ["user.first_name", "recipient.points", "device.locale", "user.external_id", "recipient.code", "campaign.name"]
                || Set(builder.variables.map(\.description))
                == ["user.first_name", "recipient.points", "device.locale", "user.external_id", "recipient.code", "campaign.name"])
        func values(_ named: [String: String]) -> PersonalValues {
            PersonalValues(values: builder.variables.map { named[$0.description] }, timeZone: "Europe/Paris")
        }
        var t = Self.target
        // A name that tries to close the string and add a key stays a string.
        t.personal = values(["user.first_name": "Anna\",\"category\":\"x", "recipient.points": "1250",
                             "user.external_id": "u-1", "recipient.code": "SAVE-1"])
        let parts = try builder.parts(for: t)
        let bytes = builder.payload(parts, for: t, replyToken: nil, sealed: nil)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let aps = try #require(json["aps"] as? [String: Any])
        let alert = try #require(aps["alert"] as? [String: Any])
        #expect(alert["title"] as? String == "Anna\",\"category\":\"x, 1\u{202F}250 points")
        #expect(alert["body"] as? String == "Langue fr-FR")
        #expect(aps["category"] == nil)
        let herald = try #require(json["herald"] as? [String: Any])
        #expect((herald["media"] as? [String: Any])?["url"] as? String == "https://cdn.example.com/u-1.png")
        #expect((herald["x"] as? [String: Any])?["who"] as? String == "u-1")
        #expect((herald["x"] as? [String: Any])?["fixed"] as? Int == 3)
        #expect(parts.sensitive.map { String(decoding: $0, as: UTF8.self) } == #"{"code":"SAVE-1"}"#)
        #expect(builder.sensitiveJSON == nil && builder.seals)

        // Without a name, the default; without points, a miss naming them.
        t.personal = values(["recipient.points": "7", "user.external_id": "u-2", "recipient.code": "SAVE-2"])
        let plain = try builder.payload(for: t, replyToken: nil, sealed: nil)
        #expect(String(decoding: plain, as: UTF8.self).contains("\"title\":\"Bonjour, 7 points\""))
        t.personal = values(["user.external_id": "u-3", "recipient.code": "SAVE-3"])
        #expect(throws: TemplateMiss(variable: .init(root: .recipient, path: ["points"]), why: "has no value and no default")) {
            try builder.parts(for: t)
        }
        // Nothing read at all is a miss too, never a text with a hole.
        t.personal = nil
        #expect(throws: TemplateMiss.self) { try builder.parts(for: t) }
    }

    @Test func aTemplateThatDoesNotParseFailsItsCampaignNamingTheField() {
        var c = Self.personal
        c.content["fr"] = LocalizedText(title: "Salut {{ user.first_name", body: "x")
        #expect(throws: CampaignProblem("content.fr.title: template line 1, column 7: \"{{\" is never closed with \"}}\"")) {
            try PreparedCampaign(campaign: c, segmentName: nil, segmentRule: .object([:]))
        }
        c = Self.personal
        c.custom = ["deep": .array([.string("{{ nope }}")])]
        #expect(throws: CampaignProblem("custom.deep[0]: template line 1, column 4: unknown variable \"nope\": a variable starts with user., device., campaign. or recipient., or is code")) {
            try PayloadBuilder(campaign: c)
        }
    }

    @Test func aCampaignWithoutTemplatesIsBuiltAsBefore() throws {
        let c = PayloadTests.flashSale
        let builder = try PayloadBuilder(campaign: c)
        #expect(builder.variables.isEmpty)
        #expect(builder.sensitiveJSON.map { String(decoding: $0, as: UTF8.self) } == #"{"coupon":"FLASH-7Q2K"}"#)
    }
}
