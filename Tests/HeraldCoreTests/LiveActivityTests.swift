import Foundation
import ExtensionKit
import HeraldCore
import Testing

@Suite("Live Activities: a sale's steps, payloads and headers")
struct LiveActivityTests {
    static let start = Date(timeIntervalSince1970: 1_796_000_000)
    static let end = start.addingTimeInterval(3600)

    static func json(_ text: String) -> JSONValue {
        try! JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    static let saleJSON = """
        {"title": "Autumn flash sale", "relevance": 80, "dismiss_after": 600,
         "state": {"headline": "40% off every coat", "price": "€49", "wasPrice": "€79", "stockLeft": 500},
         "updates": [
           {"at": "2026-11-30T01:10:00Z", "state": {"stockLeft": 120}},
           {"at": "2026-11-30T01:30:00Z", "state": {"price": "€39", "wasPrice": null},
            "alert": {"en": {"title": "Down to €39", "body": "20 minutes left"}, "fr": {"title": "Plus que 39 €", "body": "Encore 20 minutes"}}}
         ]}
        """

    static func campaign() -> Campaign {
        Campaign(id: 42, name: "autumn", kind: .flashSale,
                 content: ["en": LocalizedText(title: "Flash sale", body: "An hour only"),
                           "fr": LocalizedText(title: "Vente flash", body: "Une heure seulement")],
                 sendAt: start, expiresAt: end)
    }

    static func payload() throws -> ActivityPayload {
        let sale = try LiveActivitySale(json: json(saleJSON), sendAt: start, expiresAt: end)
        return try ActivityPayload(sale: sale, campaign: campaign())
    }

    static func object(_ bytes: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]) ?? [:]
    }

    @Test func aSaleMakesAStartItsUpdatesAndAnEndEachWithTheWholeState() throws {
        let p = try Self.payload()
        #expect(p.steps.map(\.event) == [.start, .update, .update, .end])
        #expect(p.steps.map(\.number) == [0, 1, 2, 3])
        #expect(p.steps.first?.at == Self.start && p.steps.last?.at == Self.end)
        // Each update carries every field, changed or not; a null removes one.
        #expect(p.steps[1].state[.price] == .string("€49") && p.steps[1].state[.stockLeft] == .int(120))
        #expect(p.steps[2].state[.price] == .string("€39") && p.steps[2].state[.wasPrice] == nil)
        #expect(p.steps[3].state == p.steps[2].state)
    }

    /// Apple: the time the payload's data was made, and a device ignores a push older than what it
    /// shows. The send's time, held within the step's window: never before the step's own time,
    /// never as late as the next step's, so a step sent late never outranks the next one.
    @Test func aPushesTimestampIsTheSendsTimeWithinItsStepsWindow() throws {
        let p = try Self.payload()
        let update = p.steps[1], next = p.steps[2], end = p.steps[3]
        #expect(p.timestamp(update, now: update.at.addingTimeInterval(30)) == update.at.addingTimeInterval(30))
        #expect(p.timestamp(update, now: update.at.addingTimeInterval(-5)) == update.at, "a clock behind: the step's own time")
        #expect(p.timestamp(update, now: next.at.addingTimeInterval(600)) == next.at.addingTimeInterval(-1),
                "sent after the next step fell due: still older than the next step's push")
        #expect(p.timestamp(next, now: next.at) > p.timestamp(update, now: next.at.addingTimeInterval(600)))
        #expect(p.timestamp(end, now: end.at.addingTimeInterval(90)) == end.at.addingTimeInterval(90), "the end has no later step")
        let aps = try #require(Self.object(p.payload(update, address: .activity, locale: "en", now: update.at.addingTimeInterval(2)))["aps"] as? [String: Any])
        #expect(aps["timestamp"] as? Int == Int(update.at.timeIntervalSince1970) + 2)
    }

    @Test func theStartIsPushToStartWithItsAttributesAndTheCampaignsAlertInTheDevicesLanguage() throws {
        let p = try Self.payload()
        let start = Self.object(p.payload(p.steps[0], address: .startByToken, locale: "fr-CA", now: Self.start.addingTimeInterval(7)))
        let aps = try #require(start["aps"] as? [String: Any])
        #expect(aps["event"] as? String == "start")
        #expect(aps["timestamp"] as? Int == 1_796_000_007, "the send's time")
        #expect(aps["attributes-type"] as? String == "HeraldSaleAttributes")
        #expect((aps["attributes"] as? [String: Any])?["campaign"] as? Int == 42)
        #expect((aps["attributes"] as? [String: Any])?["title"] as? String == "Autumn flash sale")
        #expect((aps["alert"] as? [String: Any])?["title"] as? String == "Vente flash")
        #expect(aps["input-push-token"] as? Int == 1 && aps["input-push-channel"] == nil)
        #expect(aps["stale-date"] as? Int == Int(p.steps[1].at.timeIntervalSince1970))
        #expect(aps["relevance-score"] as? Int == 80)
        let state = try #require(aps["content-state"] as? [String: Any])
        #expect(state["campaign"] as? Int == 42 && state["step"] as? Int == 0 && state["endsAt"] as? Int == 1_796_003_600)
        #expect(state["headline"] as? String == "40% off every coat" && state["stockLeft"] as? Int == 500)
        #expect(p.priority(p.steps[0]) == 10)

        let onChannel = Self.object(p.payload(p.steps[0], address: .startOnChannel("dHJ5IG1l"), locale: "en"))
        let channelAPS = try #require(onChannel["aps"] as? [String: Any])
        #expect(channelAPS["input-push-channel"] as? String == "dHJ5IG1l" && channelAPS["input-push-token"] == nil)
    }

    @Test func aDeviceStartedLateIsStartedWithTheCurrentStepsStateAndTimestamp() throws {
        let p = try Self.payload()
        #expect(p.start(at: Self.start) == { var s = p.steps[0]; s.event = .start; return s }())
        let late = p.start(at: p.steps[2].at.addingTimeInterval(1))
        #expect(late.event == .start && late.number == 2 && late.at == p.steps[2].at && late.alert == nil)
        #expect(late.state == p.steps[2].state)
        // After the end is due, a start shows the last update's state.
        #expect(p.start(at: Self.end.addingTimeInterval(60)).number == 2)
        let aps = try #require(Self.object(p.payload(late, address: .startByToken, locale: "en"))["aps"] as? [String: Any])
        #expect((aps["alert"] as? [String: Any])?["title"] as? String == "Flash sale", "a start alerts with the campaign's content")
        #expect(aps["stale-date"] as? Int == Int(Self.end.timeIntervalSince1970))
    }

    @Test func silentUpdatesGoAtPriorityFiveAndStaleWhenTheNextStepComes() throws {
        let p = try Self.payload()
        let update = Self.object(p.payload(p.steps[1], address: .activity, locale: "en", stockLeft: 77))
        let aps = try #require(update["aps"] as? [String: Any])
        #expect(aps["event"] as? String == "update" && aps["alert"] == nil && aps["attributes"] == nil)
        #expect((aps["content-state"] as? [String: Any])?["stockLeft"] as? Int == 77)
        #expect(p.priority(p.steps[1]) == 5)
        #expect(p.expiration(p.steps[1]) == p.steps[2].at)
        #expect(aps["stale-date"] as? Int == Int(p.steps[2].at.timeIntervalSince1970))

        let alerted = Self.object(p.payload(p.steps[2], address: .activity, locale: "de"))
        #expect(((alerted["aps"] as? [String: Any])?["alert"] as? [String: Any])?["title"] as? String == "Down to €39")
        #expect(p.priority(p.steps[2]) == 10)
    }

    @Test func theEndDismissesAfterTheSalesDelayAndStopsTheCountdown() throws {
        let p = try Self.payload()
        let end = Self.object(p.payload(p.steps[3], address: .activity, locale: "en"))
        let aps = try #require(end["aps"] as? [String: Any])
        #expect(aps["event"] as? String == "end")
        #expect(aps["dismissal-date"] as? Int == 1_796_003_600 + 600)
        #expect(aps["stale-date"] == nil && aps["alert"] == nil)
        #expect(p.priority(p.steps[3]) == 10)
        #expect(p.expiration(p.steps[3]) == Self.end.addingTimeInterval(600))
    }

    @Test func aValueCannotChangeThePayloadsStructure() throws {
        let sale = try LiveActivitySale(json: Self.json(#"{"title": "a\"},\"event\":\"end", "state": {"headline": "x\"}}", "price": "1"}}"#),
                                        sendAt: Self.start, expiresAt: Self.end)
        let p = try ActivityPayload(sale: sale, campaign: Self.campaign())
        let aps = try #require(Self.object(p.payload(p.steps[0], address: .startByToken, locale: "en"))["aps"] as? [String: Any])
        #expect(aps["event"] as? String == "start")
        #expect((aps["content-state"] as? [String: Any])?["headline"] as? String == "x\"}}")
    }

    @Test(arguments: [
        (#"[]"#, "live_activity: must be an object"),
        (#"{"title": "t", "state": {"headline": "h", "price": "p"}, "colour": 1}"#,
         #"live_activity has "colour"; use title, state, updates, dismiss_after, relevance, stock or channel"#),
        (#"{"state": {"headline": "h", "price": "p"}}"#, "live_activity.title: must be a non-empty text"),
        (#"{"title": "t", "state": {"headline": "h"}}"#, #"live_activity.state: needs "price""#),
        (#"{"title": "t", "state": {"headline": "h", "price": "p", "discount": 3}}"#,
         #"live_activity.state has "discount"; the app's content state has headline, price, wasPrice and stockLeft"#),
        (#"{"title": "t", "state": {"headline": "h", "price": 49}}"#, "live_activity.state.price: must be a non-empty text"),
        (#"{"title": "t", "state": {"headline": "h", "price": "p", "stockLeft": -1}}"#,
         "live_activity.state.stockLeft: must be a whole number of at least 0"),
        (#"{"title": "t", "state": {"headline": "h", "price": "p"}, "updates": [{"at": "2026-11-30T00:30:00Z", "state": {}}]}"#,
         "live_activity.updates[0].at: must come after the sale's send_at"),
        (#"{"title": "t", "state": {"headline": "h", "price": "p"}, "updates": [{"at": "2026-11-30T01:30:00Z", "state": {}}, {"at": "2026-11-30T01:20:00Z", "state": {}}]}"#,
         "live_activity.updates[1].at: must come after the update before it"),
        (#"{"title": "t", "state": {"headline": "h", "price": "p"}, "updates": [{"at": "2026-11-30T03:00:00Z", "state": {}}]}"#,
         "live_activity.updates[0].at: must come before the sale's end (expires_at)"),
        (#"{"title": "t", "state": {"headline": "h", "price": "p"}, "updates": [{"at": "tomorrow", "state": {}}]}"#,
         "live_activity.updates[0].at: must be a time with its zone, such as 2026-12-06T18:30:00Z"),
        (#"{"title": "t", "state": {"headline": "h", "price": "p"}, "updates": [{"at": "2026-11-30T01:30:00Z", "state": {}, "alert": {"en": {"title": "t"}}}]}"#,
         #"live_activity.updates[0].alert.en: needs a text "title" and "body" (or "title-loc-key" and "loc-key")"#),
        (#"{"title": "t", "state": {"headline": "h", "price": "p"}, "dismiss_after": 20000}"#,
         "live_activity.dismiss_after: must be whole seconds from 0 to 14400 (the system removes an ended activity after 4 hours)"),
    ])
    func aBrokenSaleIsRefusedNamingTheField(json: String, message: String) {
        #expect(throws: CampaignProblem(message)) {
            _ = try LiveActivitySale(json: Self.json(json), sendAt: Self.start, expiresAt: Self.end)
        }
    }

    @Test func aSaleNeedsAnEnd() {
        #expect(throws: CampaignProblem("live_activity: a Live Activity needs expires_at (the sale's end)")) {
            _ = try LiveActivitySale(json: Self.json(#"{"title": "t", "state": {"headline": "h", "price": "p"}}"#),
                                     sendAt: Self.start, expiresAt: nil)
        }
    }

    @Test func topicsOfThePushTypes() {
        #expect(PushTopic.liveActivity("com.example.shop") == "com.example.shop.push-type.liveactivity")
        #expect(PushTopic.widgets("com.example.shop") == "com.example.shop.push-type.widgets")
        #expect(PushTopic.controls("com.example.shop") == "com.example.shop.push-type.controls")
    }
}
