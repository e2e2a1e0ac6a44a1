@_spi(Testing) import APNs
import APNsSimulator
import Foundation
import HeraldCore
import Testing
import TestSupport

/// The push types of Live Activities, widgets and controls, and broadcast channels, against the
/// simulator over real HTTP/2 + TLS: what it refuses as APNs does, and Herald's payloads passing.
@Suite("Live Activities, broadcast channels and widget pushes at the simulator")
struct LiveActivityPushTests {
    static let topic = APNsSimulatorHarness.defaultTopic
    static let token = String(repeating: "ab", count: 32)
    static let start = Date().addingTimeInterval(-60)

    static func payload() throws -> ActivityPayload {
        let sale = LiveActivitySale(title: "Autumn flash sale", state: [.headline: .string("40% off"), .price: .string("€49")],
                                    updates: [.init(at: start.addingTimeInterval(600), state: [.price: .string("€39")], alert: nil)])
        let campaign = Campaign(id: 7, name: "autumn", kind: .flashSale, content: ["en": LocalizedText(title: "Flash sale", body: "An hour only")],
                                sendAt: start, expiresAt: start.addingTimeInterval(3600))
        return try ActivityPayload(sale: sale, campaign: campaign)
    }

    static func raw(_ headers: [(String, String)], _ body: [UInt8], token: String = token) -> RawAPNsRequest {
        RawAPNsRequest(path: "/3/device/\(token)", headers: headers, body: body)
    }

    static func live(_ priority: String = "10", topic: String = PushTopic.liveActivity(topic)) -> [(String, String)] {
        [("apns-topic", topic), ("apns-push-type", "liveactivity"), ("apns-priority", priority)]
    }

    static func json(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test("each Live Activity, widgets or controls push APNs would refuse is refused with its reason; Herald's own pass")
    func devicePushes() async throws {
        let p = try Self.payload()
        let start = p.payload(p.steps[0], address: .startByToken, locale: "en")
        let update = p.payload(p.steps[1], address: .activity, locale: "en")
        let end = p.payload(p.steps[2], address: .activity, locale: "en")
        let changed = Self.json(#"{"aps":{"content-changed":true}}"#)
        let cases: [(String, RawAPNsRequest, Int, String?)] = [
            ("Herald's start", Self.raw(Self.live(), start), 200, nil),
            ("Herald's silent update at 5", Self.raw(Self.live("5"), update), 200, nil),
            ("Herald's end", Self.raw(Self.live(), end), 200, nil),
            ("the app's own topic", Self.raw(Self.live(topic: Self.topic), update), 400, "TopicDisallowed"),
            ("an alert to the Live Activity topic",
             Self.raw([("apns-topic", PushTopic.liveActivity(Self.topic)), ("apns-push-type", "alert")], Self.json(#"{"aps":{"alert":"x"}}"#)),
             400, "TopicDisallowed"),
            ("another app's Live Activity topic", Self.raw(Self.live(topic: "com.other.app.push-type.liveactivity"), update), 400, "TopicDisallowed"),
            ("priority 1", Self.raw(Self.live("1"), update), 400, "BadPriority"),
            ("a start without an alert",
             Self.raw(Self.live(), Self.json(#"{"aps":{"timestamp":1,"event":"start","content-state":{},"attributes-type":"A","attributes":{}}}"#)),
             400, "BadPayload"),
            ("a start without attributes-type",
             Self.raw(Self.live(), Self.json(#"{"aps":{"timestamp":1,"event":"start","content-state":{},"alert":{"title":"t"},"attributes":{}}}"#)),
             400, "BadPayload"),
            ("an update without content-state", Self.raw(Self.live(), Self.json(#"{"aps":{"timestamp":1,"event":"update"}}"#)), 400, "BadPayload"),
            ("an update without timestamp", Self.raw(Self.live(), Self.json(#"{"aps":{"event":"update","content-state":{}}}"#)), 400, "BadPayload"),
            ("an unknown event", Self.raw(Self.live(), Self.json(#"{"aps":{"timestamp":1,"event":"pause","content-state":{}}}"#)), 400, "BadPayload"),
            ("an update with attributes-type",
             Self.raw(Self.live(), Self.json(#"{"aps":{"timestamp":1,"event":"update","content-state":{},"attributes-type":"A"}}"#)), 400, "BadPayload"),
            ("a widgets push", Self.raw([("apns-topic", PushTopic.widgets(Self.topic)), ("apns-push-type", "widgets")], changed), 200, nil),
            ("a controls push", Self.raw([("apns-topic", PushTopic.controls(Self.topic)), ("apns-push-type", "controls")], changed), 200, nil),
            ("a widgets push without content-changed",
             Self.raw([("apns-topic", PushTopic.widgets(Self.topic)), ("apns-push-type", "widgets")], Self.json(#"{"aps":{}}"#)), 400, "BadPayload"),
            ("a widgets push to the Live Activity topic",
             Self.raw([("apns-topic", PushTopic.liveActivity(Self.topic)), ("apns-push-type", "widgets")], changed), 400, "TopicDisallowed"),
        ]
        let running = try await APNsSimulatorHarness.start()
        let answers = try await withClient(running) { client in
            var out: [Answer] = []
            for (_, request, _, _) in cases {
                let answer = await client.sendRaw(request)
                out.append(Answer(status: answer.status, reason: answer.reason.map { "\($0)" }))
            }
            return out
        }
        for ((name, _, status, reason), answer) in zip(cases, answers) {
            #expect(answer.status == status, "\(name)")
            if let reason { #expect(answer.reason?.contains(reason) == true, "\(name): \(answer.reason ?? "none")") }
        }
    }

    struct Answer: Sendable {
        var status: Int?
        var reason: String?
    }

    static func channelClient(_ running: RunningAPNsSimulator) async throws -> APNsChannelClient {
        let configuration = running.clientConfiguration
        let credential = try #require(configuration.credentials[configuration.defaultCredential ?? ""])
        let channelsPort = try #require(running.simulator.channelsPort)
        return try APNsChannelClient(credential: credential, environment: .production,
                                     managementBaseURL: "https://127.0.0.1:\(channelsPort)",
                                     pushBaseURL: configuration.baseURLOverride, extraTrustedCAPath: configuration.extraTrustedCAPath)
    }

    @Test("a channel is made, read, listed, started on, broadcast to (one request, each subscribed device's copy in the log) and deleted")
    func aChannelsWholeLife() async throws {
        let running = try await APNsSimulatorHarness.start()
        let channels = try await Self.channelClient(running)
        let p = try Self.payload()
        let devices = (0..<3).map { _ in APNsSimulatorHarness.randomDeviceToken() }
        let outcome: Result<Void, any Error> = await {
            do {
                let id = try await channels.create(bundle: Self.topic, storagePolicy: 1)
                #expect(try await channels.read(bundle: Self.topic, channel: id) == 1)
                #expect(try await channels.list(bundle: Self.topic).contains(id))
                // Two devices start on the channel; the third by its own token.
                try await withClient(running, stoppingTheSimulator: false) { client in
                    for (index, device) in devices.enumerated() {
                        let address: ActivityAddress = index < 2 ? .startOnChannel(id) : .startByToken
                        let answer = await client.sendRaw(Self.raw(Self.live(), p.payload(p.steps[0], address: address, locale: "en"), token: device))
                        #expect(answer.status == 200)
                    }
                }
                let update = p.payload(p.steps[1], address: .activity, locale: "en")
                try await channels.broadcast(bundle: Self.topic, channel: id, payload: update, priority: 5, expiration: p.expiration(p.steps[1]))
                let stats = await running.simulator.stats
                #expect(stats.broadcasts == 1 && stats.channelsCreated == 1)
                let copies = await running.simulator.accepted.filter { $0.channel == id }
                #expect(Set(copies.map(\.deviceToken)) == Set(devices.prefix(2)), "each subscribed device once, the other not")
                #expect(copies.allSatisfy { $0.payload == update })

                // A broadcast cannot start an activity, and a channel must exist.
                let startOnChannel = p.payload(p.steps[0], address: .startOnChannel(id), locale: "en")
                await #expect(throws: APNsChannelClient.Failure(status: 400, reason: "BadPayload")) {
                    try await channels.broadcast(bundle: Self.topic, channel: id, payload: startOnChannel, priority: 10, expiration: nil)
                }
                let unknown = Data(repeating: 7, count: 16).base64EncodedString()
                await #expect(throws: APNsChannelClient.Failure(status: 400, reason: "ChannelNotRegistered")) {
                    try await channels.broadcast(bundle: Self.topic, channel: unknown, payload: update, priority: 5, expiration: nil)
                }
                // Broadcast's own size: 5,120 bytes, not 4,096.
                let padded = Array("{\"aps\":{\"timestamp\":1,\"event\":\"update\",\"content-state\":{\"headline\":\"\(String(repeating: "x", count: 4500))\"}}}".utf8)
                try await channels.broadcast(bundle: Self.topic, channel: id, payload: padded, priority: 5, expiration: nil)
                let tooLarge = Array("{\"aps\":{\"timestamp\":1,\"event\":\"update\",\"content-state\":{\"headline\":\"\(String(repeating: "x", count: 5200))\"}}}".utf8)
                await #expect(throws: APNsChannelClient.Failure(status: 413, reason: "PayloadTooLarge")) {
                    try await channels.broadcast(bundle: Self.topic, channel: id, payload: tooLarge, priority: 5, expiration: nil)
                }
                // No Message Stored takes expiration 0 only.
                let unstored = try await channels.create(bundle: Self.topic, storagePolicy: 0)
                await #expect(throws: APNsChannelClient.Failure(status: 400, reason: "BadExpirationDate")) {
                    try await channels.broadcast(bundle: Self.topic, channel: unstored, payload: update, priority: 5, expiration: Date())
                }
                try await channels.broadcast(bundle: Self.topic, channel: unstored, payload: update, priority: 5, expiration: nil)

                try await channels.delete(bundle: Self.topic, channel: id)
                await #expect(throws: APNsChannelClient.Failure(status: 400, reason: "ChannelNotRegistered")) {
                    _ = try await channels.read(bundle: Self.topic, channel: id)
                }
                #expect(try await channels.list(bundle: Self.topic) == [unstored])
                // A channel of an app the key does not push for.
                await #expect(throws: APNsChannelClient.Failure(status: 400, reason: "TopicDisallowed")) {
                    _ = try await channels.create(bundle: "com.other.app", storagePolicy: 1)
                }
                return .success(())
            } catch {
                return .failure(error)
            }
        }()
        await channels.shutdown()
        await running.stop()
        try outcome.get()
    }

    @Test("a busy or failing APNs is a transient failure, a refusal is not")
    func transientAnswers() async throws {
        let running = try await APNsSimulatorHarness.start { $0.faults.rate503 = 1 }
        let channels = try await Self.channelClient(running)
        let id = try await channels.create(bundle: Self.topic, storagePolicy: 1)
        let p = try Self.payload()
        var failure: APNsChannelClient.Failure?
        do {
            try await channels.broadcast(bundle: Self.topic, channel: id, payload: p.payload(p.steps[1], address: .activity, locale: "en"),
                                         priority: 5, expiration: nil)
        } catch { failure = error }
        await channels.shutdown()
        await running.stop()
        #expect(failure == APNsChannelClient.Failure(status: 503, reason: "ServiceUnavailable"))
        #expect(failure?.transient == true)
        #expect(APNsChannelClient.Failure(status: 400, reason: "BadChannelId").transient == false)
        #expect(APNsChannelClient.Failure(status: nil, reason: "connection refused").transient == true)
    }

    @Test("a certificate credential is refused for channels, naming why")
    func certificatesAreRefused() async throws {
        let running = try await APNsSimulatorHarness.start()
        let issued = try running.issueClientCertificate(topics: [Self.topic])
        let certificate = try APNsClientCertificate(p12Path: issued.p12Path, passwordFile: issued.passwordFilePath)
        await running.stop()
        #expect {
            _ = try APNsChannelClient(credential: .certificate(certificate), environment: .production)
        } throws: { error in
            "\(error)" == "APNs credential: a sale on broadcast channels needs a token credential (a .p8 signing key): Apple's channel and broadcast API takes a certificate too, but push-to-start, which starts every activity on the channel, takes none"
        }
    }
}
