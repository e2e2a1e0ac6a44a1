import AppServer
import Crypto
import Foundation
import HeraldCore
import Hummingbird
import HummingbirdTesting
import JWTKit
import PostgresNIO
import Settings
import Store
import TestSupport
import Testing

@Suite("Device registration (contract 6)")
struct DeviceRegistrationTests {
    @Test func requestsAboutOneDeviceAreLimited() async throws {
        var limits = AppServerLimits()
        limits.perDevice = .init(3, per: .seconds(86_400))
        try await AppHarness.with(limits: limits) { h, http in
            let t = AppHarness.token(90)
            var statuses: [Int] = []
            for _ in 0..<5 {
                statuses.append(try await h.register(http, token: t, AppHarness.device(user: "alice")).0)
            }
            #expect(statuses == [201, 200, 200, 429, 429])
            let limited = try await h.register(http, token: t, AppHarness.device(user: "alice"))
            #expect(limited.0 == 429 && limited.1["error"] == "rate_limited")
            // Another device of the same user is not affected.
            #expect(try await h.register(http, token: AppHarness.token(91), AppHarness.device(user: "alice")).0 == 201)
        }
    }

    @Test func createThenUpdate() async throws {
        try await AppHarness.with { h, http in
            let key = Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation.base64EncodedString()
            let t = AppHarness.token(1)
            let first = try await h.register(http, token: t, AppHarness.device(
                user: "alice", extra: ["public_key": key, "key_id": "alice-phone", "attributes": ["tier": "gold", "orders": 3]]))
            #expect(first.0 == 201)
            #expect(first.1["status"] == "created")
            #expect(try await h.db.scalar("""
                SELECT u.external_id || ' ' || u.locale || ' ' || u.time_zone || ' ' || dv.environment || ' ' ||
                       dv.locale || ' ' || dv.app_version || ' ' || dv.key_id
                FROM devices dv JOIN users u ON u.id = dv.user_id WHERE dv.token = '\(t)'
                """, as: String.self) == "alice fr-CA Europe/Paris sandbox fr-CA 3.1 alice-phone")
            #expect(try await h.db.scalar("SELECT public_key FROM devices WHERE token = '\(t)'", as: String.self) == key)
            try await h.db.exec("UPDATE devices SET last_seen_at = now() - interval '3 days'")

            // The same token again: updated in place, attributes merged, the config ETag stored.
            let second = try await h.register(http, token: t.uppercased(), AppHarness.device(
                user: "alice", locale: "zh-Hans", extra: ["attributes": ["tier": "silver", "city": "Lyon"], "config_etag": "\"abc\"", "app_version": "3.2"]))
            #expect(second.0 == 200)
            #expect(second.1["status"] == "updated")
            #expect(try await h.db.scalar("SELECT count(*) FROM devices", as: Int64.self) == 1)
            #expect(try await h.db.scalar("SELECT attributes::text FROM users WHERE external_id = 'alice'", as: String.self)
                    == #"{"city": "Lyon", "tier": "silver", "orders": 3}"#)
            #expect(try await h.db.scalar("""
                SELECT dv.locale || ' ' || dv.app_version || ' ' || dv.config_etag || ' ' || (dv.last_seen_at > now() - interval '1 minute')
                       || ' ' || (dv.key_id = 'alice-phone')
                FROM devices dv WHERE dv.token = '\(t)'
                """, as: String.self) == "zh-Hans 3.2 \"abc\" true true")
        }
    }

    @Test func aTokenMovesToTheUserWhoRegistersIt() async throws {
        try await AppHarness.with { h, http in
            let t = AppHarness.token(2)
            #expect(try await h.register(http, token: t, AppHarness.device(user: "alice")).0 == 201)
            // A campaign delivery queued for alice on this device.
            try await h.db.exec(Fixtures.campaign(name: "Poster"))
            try await h.db.exec("""
                INSERT INTO deliveries (campaign_id, device_id, user_id)
                SELECT c.id, d.id, d.user_id FROM campaigns c, devices d
                """)
            #expect(try await h.register(http, token: t, AppHarness.device(user: "bob", locale: "en")).0 == 200)
            #expect(try await h.db.scalar("""
                SELECT u.external_id FROM devices dv JOIN users u ON u.id = dv.user_id WHERE dv.token = '\(t)'
                """, as: String.self) == "bob")
            // The delivery queued for alice never reaches bob: the run that claims it skips it.
            #expect(try await h.db.scalar("SELECT status FROM delivery_status", as: String.self) == "queued")
            let run = try #require(try await h.db.scalar("INSERT INTO runs (host, pid) VALUES ('test', 1) RETURNING id", as: Int64.self))
            let campaign = try #require(try await h.db.scalar("SELECT id FROM campaigns", as: Int64.self))
            let claimed = try await DeliveryLedger(client: h.db, logger: TestDatabase.logger)
                .claim(campaign: campaign, run: run, limit: 10, lease: .seconds(60))
            #expect(claimed.isEmpty)
            #expect(try await h.db.scalar("SELECT status || ': ' || last_error FROM delivery_status", as: String.self)
                    == "skipped: device moved to another user")
            // Alice now cannot unregister it; bob can.
            let alice = try await h.issuer.token(user: "alice")
            #expect(try await h.send(http, .delete, token: t, bearer: alice).0 == 403)
            #expect(try await h.send(http, .delete, token: t, bearer: try await h.issuer.token(user: "bob")).0 == 204)
        }
    }

    @Test func aTokenInvalidAtTComesBackOnlyWhenRegisteredAfterT() async throws {
        try await AppHarness.with { h, http in
            let t = AppHarness.token(3)
            #expect(try await h.register(http, token: t, AppHarness.device(user: "carol"), issuedAt: Date(timeIntervalSinceNow: -1800)).0 == 201)
            // APNs answered 410 Unregistered with T = five minutes ago.
            try await h.db.exec("""
                UPDATE devices SET invalidated_at = now() - interval '5 minutes', invalid_reason = 'Unregistered'
                """)
            // A registration issued before T (ten minutes ago) changes nothing.
            let stale = try await h.register(http, token: t, AppHarness.device(user: "carol"), issuedAt: Date(timeIntervalSinceNow: -600))
            #expect(stale.0 == 409)
            #expect(stale.1["error"] == "token_invalidated")
            #expect(try await h.db.scalar("SELECT invalid_reason FROM devices", as: String.self) == "Unregistered")
            // One issued after T makes the token valid again.
            #expect(try await h.register(http, token: t, AppHarness.device(user: "carol")).0 == 200)
            #expect(try await h.db.scalar("SELECT invalidated_at IS NULL AND invalid_reason IS NULL FROM devices", as: Bool.self) == true)

            // A 410 whose T is older than the registration does not invalidate it.
            let ledger = DeliveryLedger(client: h.db, logger: TestDatabase.logger)
            try await h.db.exec(Fixtures.campaign(name: "Poster"))
            try await h.db.exec(Fixtures.campaign(name: "Poster 2"))
            // Deliveries 77 and 78, each held in flight by a run, as when APNs answers.
            let run = try #require(try await h.db.scalar("INSERT INTO runs (host, pid) VALUES ('test', 1) RETURNING id", as: Int64.self))
            try await h.db.exec("""
                INSERT INTO deliveries (id, campaign_id, device_id, user_id, status, claimed_by, lease_expires_at)
                SELECT 76 + row_number() OVER (ORDER BY c.id), c.id, d.id, d.user_id, 'in_flight', \(run), now() + interval '5 minutes'
                FROM campaigns c, devices d
                """)
            let deviceID = try #require(try await h.db.scalar("SELECT id FROM devices", as: Int64.self))
            let campaign77 = try await h.db.scalar("SELECT campaign_id FROM delivery_status WHERE id = 77", as: Int64.self)
            let campaign78 = try await h.db.scalar("SELECT campaign_id FROM delivery_status WHERE id = 78", as: Int64.self)
            try await ledger.record([DeliveryOutcome(deliveryID: 77, deviceID: deviceID, status: .invalid, error: "Unregistered",
                                                    invalidSince: Date(timeIntervalSinceNow: -3600))], run: run, campaign: campaign77)
            #expect(try await h.db.scalar("SELECT invalidated_at IS NULL FROM devices", as: Bool.self) == true)
            try await ledger.record([DeliveryOutcome(deliveryID: 78, deviceID: deviceID, status: .invalid, error: "Unregistered",
                                                    invalidSince: Date())], run: run, campaign: campaign78)
            #expect(try await h.db.scalar("SELECT invalidated_at IS NOT NULL FROM devices", as: Bool.self) == true)
        }
    }

    @Test func aNewKeyReplacesTheOld() async throws {
        try await AppHarness.with { h, http in
            let t = AppHarness.token(4)
            let k1 = Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation.base64EncodedString()
            let k2 = Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation.base64EncodedString()
            #expect(try await h.register(http, token: t, AppHarness.device(user: "dan", extra: ["public_key": k1, "key_id": "k1"])).0 == 201)
            #expect(try await h.register(http, token: t, AppHarness.device(user: "dan", extra: ["public_key": k2, "key_id": "k2"])).0 == 200)
            #expect(try await h.db.scalar("SELECT key_id || ' ' || public_key FROM devices", as: String.self) == "k2 \(k2)")
            // Without a key the registered one stays; without a key_id, Herald names the key.
            #expect(try await h.register(http, token: t, AppHarness.device(user: "dan")).0 == 200)
            #expect(try await h.db.scalar("SELECT key_id FROM devices", as: String.self) == "k2")
            #expect(try await h.register(http, token: t, AppHarness.device(user: "dan", extra: ["public_key": k1])).0 == 200)
            let expected = try DeviceKey(base64: k1).keyID
            #expect(try await h.db.scalar("SELECT key_id FROM devices", as: String.self) == expected)
        }
    }

    @Test func optOutAndOptIn() async throws {
        try await AppHarness.with { h, http in
            let t = AppHarness.token(5)
            let optedOutSQL = "SELECT opted_out_at IS NOT NULL FROM users WHERE external_id = 'erin'"
            let created = try await h.register(http, token: t, AppHarness.device(user: "erin", extra: ["marketing": false]))
            #expect(created.0 == 201)
            #expect(try await h.db.scalar(optedOutSQL, as: Bool.self) == true)
            #expect(try await h.register(http, token: t, AppHarness.device(user: "erin")).0 == 200)
            #expect(try await h.db.scalar(optedOutSQL, as: Bool.self) == true, "a registration without marketing leaves the choice alone")
            #expect(try await h.register(http, token: t, AppHarness.device(user: "erin", extra: ["marketing": true])).0 == 200)
            #expect(try await h.db.scalar(optedOutSQL, as: Bool.self) == false)
        }
    }

    @Test func logoutStopsTargetingUntilTheNextRegistration() async throws {
        try await AppHarness.with { h, http in
            let t = AppHarness.token(6)
            #expect(try await h.register(http, token: t, AppHarness.device(user: "fay"), issuedAt: Date(timeIntervalSinceNow: -120)).0 == 201)
            let bearer = try await h.issuer.token(user: "fay")
            #expect(try await h.send(http, .delete, token: t, bearer: bearer).0 == 204)
            #expect(try await h.send(http, .delete, token: t, bearer: bearer).0 == 204)
            #expect(try await h.db.scalar("SELECT invalid_reason FROM devices", as: String.self) == "unregistered by the app")
            #expect(try await h.send(http, .delete, token: AppHarness.token(99), bearer: bearer).0 == 404)
            // Logging in again a few seconds later (a token issued now) brings the device back.
            try await h.db.exec("UPDATE devices SET invalidated_at = now() - interval '2 seconds'")
            #expect(try await h.register(http, token: t, AppHarness.device(user: "fay")).0 == 200)
            #expect(try await h.db.scalar("SELECT invalidated_at IS NULL FROM devices", as: Bool.self) == true)
        }
    }

    @Test func everyRefusal() async throws {
        try await AppHarness.with { h, http in
            let t = AppHarness.token(7)
            let good = AppHarness.body(AppHarness.device(user: "gus"))
            let forger = try await AppTokenIssuer()
            let now = Date()
            func claims(aud: String = "herald", iat: Date = now, exp: TimeInterval = 600) -> AppRegistrationClaims {
                var c = AppRegistrationClaims(user: "gus", issuedAt: iat, lifetime: exp)
                c.aud = AudienceClaim(value: [aud])
                return c
            }
            let valid = try await h.issuer.token(claims())
            let cases: [(String, String, String?, Int, String)] = [
                ("no token", good, nil, 401, "bad_app_token"),
                ("not a JWT", good, "not-a-jwt", 401, "bad_app_token"),
                ("forged signature", good, try await forger.token(claims()), 401, "bad_app_token"),
                ("wrong aud", good, try await h.issuer.token(claims(aud: "someone-else")), 401, "bad_app_token"),
                ("expired", good, try await h.issuer.token(claims(iat: now.addingTimeInterval(-1200), exp: 600)), 401, "bad_app_token"),
                ("lives over an hour", good, try await h.issuer.token(claims(exp: 7200)), 401, "bad_app_token"),
                ("issued in the future", good, try await h.issuer.token(claims(iat: now.addingTimeInterval(600))), 401, "bad_app_token"),
                ("sub is not user", AppHarness.body(AppHarness.device(user: "mallory")), valid, 403, "user_mismatch"),
                ("not JSON", "{nope", valid, 400, "malformed_json"),
                ("no user", AppHarness.body(["environment": "sandbox"]), valid, 400, "malformed_json"),
                ("unknown field", AppHarness.body(AppHarness.device(user: "gus", extra: ["timezone": "UTC"])), valid, 400, "malformed_json"),
                ("marketing not a boolean", AppHarness.body(AppHarness.device(user: "gus", extra: ["marketing": "no"])), valid, 400, "malformed_json"),
                ("bad environment", AppHarness.body(AppHarness.device(user: "gus", extra: ["environment": "staging"])), valid, 422, "bad_environment"),
                ("bad key", AppHarness.body(AppHarness.device(user: "gus", extra: ["public_key": "AAAA"])), valid, 422, "bad_public_key"),
                ("key id alone", AppHarness.body(AppHarness.device(user: "gus", extra: ["key_id": "k"])), valid, 422, "bad_key_id"),
                ("bad locale", AppHarness.body(AppHarness.device(user: "gus", locale: "français!")), valid, 422, "bad_locale"),
                ("bad time zone", AppHarness.body(AppHarness.device(user: "gus", extra: ["time_zone": "Mars/Olympus"])), valid, 422, "bad_time_zone"),
            ]
            for (what, body, bearer, status, code) in cases {
                let (got, json) = try await h.send(http, token: t, body: body, bearer: bearer)
                #expect(got == status, "\(what)")
                #expect(json["error"] == code, "\(what)")
                #expect(!(json["message"] ?? "").isEmpty, "\(what)")
                if let bearer { #expect(!(json["message"] ?? "").contains(bearer), "\(what): the message repeats the token") }
            }
            for bad in ["abc", String(repeating: "g", count: 64), String(repeating: "0", count: 63)] {
                let (got, json) = try await h.send(http, token: bad, body: good, bearer: valid)
                #expect(got == 422)
                #expect(json["error"] == "bad_device_token")
            }
            #expect(try await h.db.scalar("SELECT count(*) FROM devices", as: Int64.self) == 0)
            #expect(try await h.db.scalar("SELECT count(*) FROM users", as: Int64.self) == 0)
        }
    }

    @Test func anEdDSAKeyWorksToo() async throws {
        try await AppHarness.with(algorithm: .eddsa) { h, http in
            #expect(h.issuer.algorithm == .eddsa)
            #expect(try await h.register(http, token: AppHarness.token(8), AppHarness.device(user: "hana")).0 == 201)
            let es256 = try await AppTokenIssuer(algorithm: .es256)
            let (status, _) = try await h.send(http, token: AppHarness.token(8), body: AppHarness.body(AppHarness.device(user: "hana")),
                                               bearer: try await es256.token(user: "hana"))
            #expect(status == 401)
        }
    }

    @Test func withoutAConfiguredKeyRegistrationIsUnavailable() async throws {
        try await TestDatabase.with { client, _ in
            let intake = ReplyIntake(store: ReplyStore(client: client, logger: TestDatabase.logger),
                                     tokens: ReplyTokens(secret: IntakeTests.secret), logger: TestDatabase.logger)
            let app = Application(router: AppHTTPServer.router(intake: intake))
            try await app.test(.live) { http in
                try await http.execute(uri: "/v1/devices/\(AppHarness.token(9))", method: .put,
                                       body: ByteBuffer(string: "{}")) { response in
                    #expect(response.status.code == 503)
                    #expect(String(buffer: response.body).contains("registration_disabled"))
                }
            }
        }
    }

    /// The key comes from the configuration (`HERALD_APP_JWT_PUBLIC_KEY`, inline or `_FILE`), read as `herald serve` reads it.
    static func verifier(_ env: [String: String]) async throws -> AppTokenVerifier? {
        let settings = try ServeSettings(environment: env)
        return try await AppKeys.verifiers(apps: [], defaultPEM: settings.appJWTPublicKeyPEM,
                                           defaultSource: settings.appJWTPublicKeySource)[AppRecord.defaultName]
    }

    @Test func theKeyComesFromTheConfiguration() async throws {
        #expect(try await Self.verifier([:]) == nil)
        let es = try await AppTokenIssuer(algorithm: .es256)
        // Inline, with its line breaks written as \n (as in an env file).
        let inline = es.publicKeyPEM.replacingOccurrences(of: "\n", with: "\\n")
        let fromInline = try #require(try await Self.verifier(["HERALD_APP_JWT_PUBLIC_KEY": inline]))
        #expect(fromInline.algorithm == .es256)
        if case .failure(let e) = await fromInline.verify(authorization: "Bearer " + (try await es.token(user: "u"))) {
            Issue.record("a good token was refused: \(e)")
        }
        // From a file, EdDSA.
        let ed = try await AppTokenIssuer(algorithm: .eddsa)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("app-jwt-\(UUID()).pem").path
        try ed.publicKeyPEM.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fromFile = try #require(try await Self.verifier(["HERALD_APP_JWT_PUBLIC_KEY_FILE": path]))
        #expect(fromFile.algorithm == .eddsa)
        // A private key or garbage is refused, naming the variable and not echoing the text.
        do {
            _ = try await Self.verifier(["HERALD_APP_JWT_PUBLIC_KEY": es.privateKeyPEM])
            Issue.record("a private key was accepted as the public key")
        } catch {
            #expect("\(error)".contains("HERALD_APP_JWT_PUBLIC_KEY"))
            #expect(!"\(error)".contains("PRIVATE"))
        }
        do {
            _ = try await Self.verifier(["HERALD_APP_JWT_PUBLIC_KEY_FILE": "/nonexistent/key.pem"])
            Issue.record("a missing file was accepted")
        } catch {
            #expect("\(error)".contains("HERALD_APP_JWT_PUBLIC_KEY_FILE") && "\(error)".contains("/nonexistent/key.pem"))
        }
    }

    @Test func serveSettingsNameTheirVariable() throws {
        let settings = try ServeSettings(environment: ["HERALD_HTTP_PORT": "9090", "HERALD_RATE_DEVICE": "3",
                                                       "HERALD_TRUSTED_PROXIES": "10.0.0.1, ::1"])
        #expect(settings.port == 9090 && settings.ratePerDevice == 3 && settings.trustedProxies == ["10.0.0.1", "::1"])
        #expect(settings.ratePerAddress == nil)
        for (name, value) in [("HERALD_HTTP_PORT", "80a"), ("HERALD_HTTP_PORT", "70000"), ("HERALD_RATE_ADDRESS", "0"),
                              ("HERALD_HTTP_HEADER_TIMEOUT", "soon"), ("HERALD_TRUSTED_PROXIES", "proxy.local")] {
            #expect {
                try ServeSettings(environment: [name: value])
            } throws: { "\($0)".contains(name) && "\($0)".contains(value) }
        }
    }
}
