import APNs
import APNsSimulator
import AppServer
import Crypto
import ExtensionKit
import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Runner
import Settings
import Store
import TestSupport
import Testing

/// The app's side of the loop against the real pieces: devices register over
/// HTTP, `herald run` sends through the APNs simulator (HTTP/2 + TLS).
@Suite("The app's side: registration → config refresh → campaign", .serialized)
struct AppLoopTests {
    static let secret = ReplySecret.generate()

    /// A run like `herald run`, with the config refresh lead of the default (an hour) unless told.
    static func run(_ client: Database, _ sim: RunningAPNsSimulator, lead: TimeInterval? = nil) async throws -> RunSummary {
        let stores = RunStores(client: client, logger: TestDatabase.logger)
        let apns = try APNsClient(configuration: sim.clientConfiguration, logger: TestDatabase.logger)
        var options = RunOptions(topic: sim.topic, batchSize: 50, concurrency: 20)
        if let lead { options.configRefreshLead = lead }
        let run = CampaignRun(stores: stores, options: options,
                              personalizer: ReplyLoopPersonalizer(tokens: ReplyTokens(secret: secret)),
                              transport: apns, logger: TestDatabase.logger)
        return try await withThrowingTaskGroup(of: RunSummary?.self) { group in
            group.addTask {
                try await apns.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await run.execute()
        }
    }

    static func withLoop(_ body: @Sendable (Database, AppTokenIssuer, any TestClientProtocol, RunningAPNsSimulator) async throws -> Void) async throws {
        let issuer = try await AppTokenIssuer()
        let verifier = try await AppTokenVerifier(publicKeyPEM: issuer.publicKeyPEM)
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec("""
                UPDATE actions SET localized = '{"fr": {"title": "Réserver"}, "zh-Hans": {"title": "立即预订"}}' WHERE id = 'reserve';
                """)
            let intake = ReplyIntake(store: ReplyStore(client: client, logger: TestDatabase.logger),
                                     tokens: ReplyTokens(secret: secret), logger: TestDatabase.logger)
            let app = Application(router: AppHTTPServer.router(
                intake: intake, app: AppEndpoints(client: client, verifier: verifier, logger: TestDatabase.logger)))
            let sim = try await APNsSimulatorHarness.start(logger: TestDatabase.logger)
            do {
                try await app.test(.live) { http in try await body(client, issuer, http, sim) }
                await sim.stop()
            } catch {
                await sim.stop()
                throw error
            }
        }
    }

    static func register(_ http: any TestClientProtocol, _ issuer: AppTokenIssuer, token: String,
                         _ r: AppRequestBuilder.Registration) async throws -> Int {
        let request = AppRequestBuilder(baseURL: URL(fileURLWithPath: "/"))
            .register(deviceTokenHex: token, r, bearer: try await issuer.token(user: r.user))
        var headers = HTTPFields()
        for (name, value) in request.headers { if let n = HTTPField.Name(name) { headers[n] = value } }
        return try await http.execute(uri: request.url.path, method: .put, headers: headers,
                                      body: ByteBuffer(bytes: request.body)) { Int($0.status.code) }
    }

    /// The app fetches the config in its locale; the ETag it registers.
    static func fetchConfig(_ http: any TestClientProtocol, locale: String) async throws -> NotificationConfigDocument {
        try await http.execute(uri: "/v1/notification-config?locale=\(locale)", method: .get) { response in
            try NotificationConfigDocument(json: Data(buffer: response.body), etag: response.headers[.eTag])
        }
    }

    static func token(_ name: String) -> String {
        SHA256.hash(data: Data(name.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    @Test func aRegisteredDeviceGetsTheNextCampaignInItsLanguageSealedToItsKey() async throws {
        try await Self.withLoop { db, issuer, http, sim in
            // The user is known in English; this device is set to Simplified Chinese.
            try await db.exec("INSERT INTO users (external_id, locale) VALUES ('zoe', 'en')")
            let key = Curve25519.KeyAgreement.PrivateKey()
            let t = Self.token("zoe's phone")
            #expect(try await Self.register(http, issuer, token: t, .init(
                environment: "production", user: "zoe", locale: "zh-Hans-CN", timeZone: "Asia/Shanghai", appVersion: "3.0",
                publicKey: key.publicKey.rawRepresentation.base64EncodedString(), keyID: "zoe-1")) == 201)
            try await db.exec(Fixtures.campaign(name: "Sale", kind: "flash_sale"))
            try await db.exec(#"UPDATE campaigns SET sensitive = '{"coupon": "ZOE-42"}', send_at = now() + interval '10 minutes'"#)

            // Ten minutes before: the device never reported a config, so it gets the refresh push.
            let before = try await Self.run(db, sim)
            #expect(before.figures.sent == 0)
            #expect(before.configRefresh.sent == 1)
            try await db.exec("UPDATE campaigns SET send_at = now()")
            let summary = try await Self.run(db, sim)
            #expect(summary.figures.sent == 1)
            #expect(summary.configRefresh.sent == 0)
            let accepted = await sim.simulator.accepted
            #expect(accepted.map { $0.headers["apns-push-type"] } == ["background", "alert"])
            let refresh = try #require(HeraldConfigRefresh(json: Data(accepted[0].payload)))
            let config = try await Self.fetchConfig(http, locale: "zh-Hans-CN")
            #expect(refresh.etag == config.etag)
            #expect(config.actions["reserve"]?.title == "立即预订")

            let alert = accepted[1]
            #expect(alert.deviceToken == t)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(alert.payload)) as? [String: Any])
            let title = ((object["aps"] as? [String: Any])?["alert"] as? [String: Any])?["title"] as? String
            #expect(title == "你好", "the device's own locale wins over the user's")
            let notification = try HeraldNotification(json: Data(alert.payload))
            let fields = try EnvelopeOpener(privateKey: key).sealedFields(in: notification)
            #expect(fields?["coupon"] == "ZOE-42")
        }
    }

    @Test func oneRefreshPerDeviceAndConfigVersionBeforeTheCampaign() async throws {
        try await Self.withLoop { db, issuer, http, sim in
            // A has the current config, B never reported one, C has an older one.
            let old = try await Self.fetchConfig(http, locale: "fr")
            try await db.exec(#"UPDATE actions SET localized = jsonb_set(localized, '{fr,title}', '"Je réserve"') WHERE id = 'reserve'"#)
            let current = try await Self.fetchConfig(http, locale: "fr")
            #expect(old.etag != current.etag)
            let a = Self.token("A"), b = Self.token("B"), c = Self.token("C")
            #expect(try await Self.register(http, issuer, token: a, .init(environment: "production", user: "ann", locale: "fr", configETag: current.etag)) == 201)
            #expect(try await Self.register(http, issuer, token: b, .init(environment: "sandbox", user: "ben", locale: "en")) == 201)
            #expect(try await Self.register(http, issuer, token: c, .init(environment: "production", user: "cat", locale: "fr", configETag: old.etag)) == 201)
            // A flash sale in 30 minutes, within the hour's lead.
            try await db.exec(Fixtures.campaign(name: "Sale", kind: "flash_sale"))
            try await db.exec("UPDATE campaigns SET send_at = now() + interval '30 minutes', expires_at = now() + interval '3 hours'")

            let first = try await Self.run(db, sim)
            #expect(first.figures.sent == 0, "the campaign itself is not due yet")
            #expect(first.configRefresh.sent == 2)
            var accepted = await sim.simulator.accepted
            #expect(Set(accepted.map(\.deviceToken)) == [b, c])
            for push in accepted {
                #expect(push.headers["apns-push-type"] == "background")
                #expect(push.headers["apns-priority"] == "5")
                #expect(push.headers["apns-topic"] == sim.topic)
                let json = try #require(try JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any])
                #expect(((json["aps"] as? [String: Any]) ?? [:]).keys.sorted() == ["content-available"])
                let locale = push.deviceToken == b ? "en" : "fr"
                #expect(HeraldConfigRefresh(json: Data(push.payload))?.etag == (try await Self.fetchConfig(http, locale: locale)).etag)
            }
            #expect(try await db.scalar("SELECT count(*) FROM delivery_status WHERE kind = 'config_refresh' AND status = 'sent'", as: Int64.self) == 2)

            // Another run before the sale: nothing twice.
            _ = try await Self.run(db, sim)
            #expect(await sim.simulator.accepted.count == 2)

            // A change only English shows: only the English device gets a push.
            try await db.exec("UPDATE actions SET title = 'Book now' WHERE id = 'reserve'")
            let english = try await Self.run(db, sim)
            #expect(english.configRefresh.sent == 1)
            accepted = await sim.simulator.accepted
            #expect(accepted.count == 3)
            #expect(accepted.last?.deviceToken == b)

            // The flash sale gets a third button: a new config version in every language, one more push per device.
            try await db.exec("INSERT INTO category_actions (category_id, action_id, position) VALUES ('flash_sale.v1', 'dont_care', 3)")
            let third = try await Self.run(db, sim)
            #expect(third.configRefresh.sent == 3)
            accepted = await sim.simulator.accepted
            #expect(accepted.count == 6)
            #expect(Set(accepted.dropFirst(3).map(\.deviceToken)) == [a, b, c])

            // B's app fetched the new config and reported it; A and C did not.
            let fresh = try await Self.fetchConfig(http, locale: "en")
            #expect(try await Self.register(http, issuer, token: b, .init(environment: "sandbox", user: "ben", locale: "en", configETag: fresh.etag)) == 200)

            // The sale starts: every device gets it, after its refresh; no new refresh.
            try await db.exec("UPDATE campaigns SET send_at = now()")
            let sale = try await Self.run(db, sim)
            #expect(sale.figures.sent == 3)
            #expect(sale.configRefresh.sent == 0)
            accepted = await sim.simulator.accepted
            #expect(accepted.count == 9)
            for device in [a, b, c] {
                let types = accepted.filter { $0.deviceToken == device }.map { $0.headers["apns-push-type"] ?? "" }
                #expect(types.last == "alert")
                #expect(types.dropLast().allSatisfy { $0 == "background" })
            }
            #expect(try await db.scalar("""
                SELECT count(*) FROM analyst.config_refreshes WHERE status = 'sent'
                """, as: Int64.self) == 5, "two config versions for French, three for English")
        }
    }

    @Test func theLeadTimeDecidesWhenTheRefreshGoes() async throws {
        try await Self.withLoop { db, issuer, http, sim in
            #expect(try await Self.register(http, issuer, token: Self.token("E"), .init(environment: "production", user: "eve")) == 201)
            try await db.exec(Fixtures.campaign(name: "Later", kind: "flash_sale"))
            try await db.exec("UPDATE campaigns SET send_at = now() + interval '90 minutes', expires_at = now() + interval '3 hours'")
            #expect(try await Self.run(db, sim).configRefresh.campaigns == 0, "90 minutes ahead is outside the default hour")
            #expect(await sim.simulator.accepted.isEmpty)
            let early = try await Self.run(db, sim, lead: 2 * 3600)
            #expect(early.configRefresh.sent == 1)
            #expect(await sim.simulator.accepted.count == 1)
            let config = try HeraldConfiguration(environment: [
                "DATABASE_URL": "postgres://u@127.0.0.1/d", "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
                "HERALD_CONFIG_REFRESH_LEAD_MINUTES": "120",
            ])
            #expect(config.configRefreshLeadMinutes == 120)
            #expect(throws: ConfigurationError.self) {
                try HeraldConfiguration(environment: [
                    "DATABASE_URL": "postgres://u@127.0.0.1/d", "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
                    "HERALD_CONFIG_REFRESH_LEAD_MINUTES": "soon",
                ])
            }
        }
    }

    @Test func aCampaignAlreadyDueGetsNoRefreshPush() async throws {
        try await Self.withLoop { db, issuer, http, sim in
            #expect(try await Self.register(http, issuer, token: Self.token("D"), .init(environment: "production", user: "dee")) == 201)
            try await db.exec(Fixtures.campaign(name: "Now", kind: "flash_sale"))
            let summary = try await Self.run(db, sim)
            #expect(summary.figures.sent == 1)
            #expect(summary.configRefresh.campaigns == 0)
            #expect(await sim.simulator.accepted.map { $0.headers["apns-push-type"] } == ["alert"])
        }
    }

    @Test func theSimulatorRefusesABackgroundPushAtPriority10() async throws {
        let sim = try await APNsSimulatorHarness.start(logger: TestDatabase.logger)
        let client = try APNsClient(configuration: sim.clientConfiguration, logger: TestDatabase.logger)
        let payload = Array(#"{"aps":{"content-available":1},"herald":{"config":"\"x\""}}"#.utf8)
        let results = await withThrowingTaskGroup(of: [APNsResult]?.self) { group in
            group.addTask {
                try await client.run()
                return nil
            }
            defer { group.cancelAll() }
            let token = APNsSimulatorHarness.randomDeviceToken()
            let high = await client.send(APNsNotification(deviceToken: token, pushType: "background", priority: 10, payload: payload))
            let low = await client.send(APNsNotification(deviceToken: token, pushType: "background", priority: 5, payload: payload))
            return [high, low]
        }
        await sim.stop()
        #expect(results.first?.outcome == .failed(status: 400, reason: .badPriority))
        if case .sent? = results.last?.outcome {} else { Issue.record("priority 5 was refused: \(String(describing: results.last))") }
    }

    @Test func campaignTextMayUseTheAppsOwnStrings() async throws {
        try await TestDatabase.with { db, _ in
            try await db.exec(Fixtures.catalogue)
            try await db.exec("""
                INSERT INTO campaigns (name, kind, status, content, category_id, media_url)
                VALUES ('Keys', 'poster', 'scheduled',
                        '{"en": {"title": "Hello", "body": "World"},
                          "es": {"title-loc-key": "POSTER_TITLE", "loc-key": "POSTER_BODY", "loc-args": ["Ana", "3"]}}',
                        'poster.v1', 'https://cdn.example.com/p.gif')
                """)
            let refused: [(String, String)] = [
                (#"{"title-loc-key": "T", "title": "x", "body": "b"}"#, #"give "title" or "title-loc-key", not both"#),
                (#"{"title": "t", "loc-args": ["a"], "body": "b"}"#, #""loc-args" needs "loc-key""#),
                (#"{"title": "t", "loc-key": "B", "loc-args": "a"}"#, #""loc-args" must be a list of texts"#),
                (#"{"title": "t", "loc-key": ""}"#, #""loc-key" must be a non-empty text"#),
                (#"{"title-loc-key": "T"}"#, #"needs a text "title" and "body" (or "title-loc-key" and "loc-key")"#),
                (#"{"title": "t", "body": "b", "badge": 1}"#, #"has "badge""#),
            ]
            for (entry, expected) in refused {
                do {
                    try await db.exec("""
                        INSERT INTO campaigns (name, kind, content, category_id, media_url)
                        VALUES ('Bad', 'poster', '{"en": \(entry)}', 'poster.v1', 'https://cdn.example.com/p.gif')
                        """)
                    Issue.record("accepted \(entry)")
                } catch {
                    let message = ErrorText.describe(error)
                    #expect(message.contains(#"campaign "Bad": content for locale "en""#), "\(message)")
                    #expect(message.contains(expected), "\(entry): \(message)")
                }
            }
            let stores = RunStores(client: db, logger: TestDatabase.logger)
            let id = try #require(try await db.scalar("SELECT id FROM campaigns WHERE name = 'Keys'", as: Int64.self))
            let due = try await stores.campaigns.loadCampaign(id)
            let builder = try PayloadBuilder(campaign: due.campaign)
            let payload = try builder.payload(for: DeliveryTarget(deliveryID: 1, deviceToken: "", environment: .production, locale: "es-MX"),
                                          replyToken: nil, sealed: nil)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
            let alert = try #require((json["aps"] as? [String: Any])?["alert"] as? [String: Any])
            #expect(alert["title-loc-key"] as? String == "POSTER_TITLE")
            #expect(alert["loc-key"] as? String == "POSTER_BODY")
            #expect(alert["loc-args"] as? [String] == ["Ana", "3"])
            #expect(alert["title"] == nil && alert["body"] == nil)
        }
    }
}
