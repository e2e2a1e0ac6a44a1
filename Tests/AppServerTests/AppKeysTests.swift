import AppServer
import Foundation
import HeraldCore
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import Store
import TestSupport
import Testing

/// Registration with several apps (Sql/0027): the token's `aud` names the
/// app, and only that app's keys verify it; keys replaced while requests
/// come in. Real HTTP, a real database.
@Suite("Several apps' registration keys")
struct AppKeysTests {
    struct Backends: Sendable {
        let shop: AppTokenIssuer
        let companion: AppTokenIssuer
    }

    /// The app `default` (the shop) on HERALD_APP_JWT_PUBLIC_KEY, the app
    /// `companion` on its registration_keys; the keys as `herald serve` loads them.
    static func with(_ body: @Sendable (Backends, AppKeys, AppHarness, any TestClientProtocol) async throws -> Void) async throws {
        let backends = Backends(shop: try await AppTokenIssuer(), companion: try await AppTokenIssuer(algorithm: .eddsa))
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            let store = AppStore(client: client, logger: TestDatabase.logger)
            try await store.add(name: "companion", displayName: "Companion", topic: "com.example.companion",
                                registrationKeys: [backends.companion.publicKeyPEM])
            let keys = AppKeys(try await AppKeys.verifiers(apps: try await store.all(), defaultPEM: backends.shop.publicKeyPEM))
            #expect(keys.apps == ["companion", "default"])
            let intake = ReplyIntake(store: ReplyStore(client: client, logger: TestDatabase.logger),
                                     tokens: ReplyTokens(secret: IntakeTests.secret), logger: TestDatabase.logger)
            let endpoints = AppEndpoints(client: client, keys: keys, logger: TestDatabase.logger)
            let app = Application(router: AppHTTPServer.router(intake: intake, app: endpoints, limits: AppHarness.roomy))
            try await app.test(.live) { http in
                try await body(backends, keys, AppHarness(issuer: backends.shop, db: client), http)
            }
        }
    }

    static func put(_ h: AppHarness, _ http: any TestClientProtocol, device n: Int, user: String,
                    issuer: AppTokenIssuer, app: String?) async throws -> (Int, [String: String]) {
        try await h.send(http, token: AppHarness.token(n), body: AppHarness.body(AppHarness.device(user: user)),
                         bearer: try await issuer.token(user: user, app: app))
    }

    @Test("a token names its app in aud and verifies with that app's keys only")
    func eachAppsBackendRegistersItsOwnDevices() async throws {
        try await Self.with { b, _, h, http in
            #expect(try await Self.put(h, http, device: 1, user: "ann", issuer: b.shop, app: nil).0 == 201)
            let (status, body) = try await Self.put(h, http, device: 2, user: "bob", issuer: b.companion, app: "companion")
            #expect(status == 201, "\(body)")
            #expect(try await h.db.scalar("SELECT app FROM devices WHERE token = '\(AppHarness.token(1))'", as: String.self) == "default")
            #expect(try await h.db.scalar("SELECT app FROM devices WHERE token = '\(AppHarness.token(2))'", as: String.self) == "companion")

            // App B's aud with app A's key, and the other way round: refused.
            let (forged, why) = try await Self.put(h, http, device: 3, user: "eve", issuer: b.shop, app: "companion")
            #expect(forged == 401)
            #expect(why["message"]?.contains("does not verify") == true, "\(why)")
            #expect(try await Self.put(h, http, device: 3, user: "eve", issuer: b.companion, app: nil).0 == 401)
            // An app Herald does not serve.
            let (unknown, message) = try await Self.put(h, http, device: 3, user: "eve", issuer: b.companion, app: "nope")
            #expect(unknown == 401)
            #expect(message["message"] == "the token's aud names app \"nope\", which has no registration key here")

            // A device of the companion app cannot be taken by the shop's backend.
            let (taken, answer) = try await Self.put(h, http, device: 2, user: "bob", issuer: b.shop, app: nil)
            #expect(taken == 409)
            #expect(answer["error"] == "token_of_another_app")
            // …nor unregistered by it; its own backend can.
            let delete = try await h.send(http, .delete, token: AppHarness.token(2), bearer: try await b.shop.token(user: "bob"))
            #expect(delete.0 == 404)
            let own = try await h.send(http, .delete, token: AppHarness.token(2),
                                       bearer: try await b.companion.token(user: "bob", app: "companion"))
            #expect(own.0 == 204)
        }
    }

    @Test("a backend's key is replaced while it registers: the new key beside the old, then alone; nothing refused")
    func aRegistrationKeyRotatesWithNoRefusal() async throws {
        try await Self.with { b, keys, h, http in
            let next = try await AppTokenIssuer()
            let store = AppStore(client: h.db, logger: TestDatabase.logger)
            let signer = Signer(b.companion)
            let statuses = Statuses()
            // Registrations keep coming while the key is replaced.
            let load = Task {
                for n in 0..<120 {
                    let (issuer, generation) = await signer.signing
                    let status = try await Self.put(h, http, device: 100 + n % 40, user: "u\(n % 40)", issuer: issuer,
                                                    app: "companion").0
                    await statuses.add(status, signedBy: generation)
                    try await Task.sleep(for: .milliseconds(2))
                }
            }
            try await Task.sleep(for: .milliseconds(60))
            // 1. The new public key beside the old one, and a reload (what SIGHUP does).
            #expect(try await store.addRegistrationKey(app: "companion", publicKeyPEM: next.publicKeyPEM))
            keys.replace(try await AppKeys.verifiers(apps: try await store.all(), defaultPEM: b.shop.publicKeyPEM))
            try await Task.sleep(for: .milliseconds(60))
            // 2. The backend signs with the new key; the request it signed with the old one, if
            // any was still on its way, is answered before the old key goes.
            await signer.use(next)
            try await Task.sleep(for: .milliseconds(60))
            for _ in 0..<3000 where await !statuses.answered(signedBy: 1) {
                try await Task.sleep(for: .milliseconds(10))
            }
            // 3. The old key removed, and a reload.
            try await h.db.exec("UPDATE apps SET registration_keys = ARRAY[registration_keys[2]] WHERE name = 'companion'")
            keys.replace(try await AppKeys.verifiers(apps: try await store.all(), defaultPEM: b.shop.publicKeyPEM))
            try await load.value
            let seen = await statuses.all
            #expect(seen.count == 120)
            #expect(seen.allSatisfy { $0 == 200 || $0 == 201 }, "\(seen.filter { $0 >= 300 })")
            // The old key no longer verifies.
            #expect(try await Self.put(h, http, device: 100, user: "u0", issuer: b.companion, app: "companion").0 == 401)
        }
    }

    actor Signer {
        var current: AppTokenIssuer
        init(_ issuer: AppTokenIssuer) { current = issuer }
        /// Which key signs: 0 the first, 1 the next.
        var generation = 0
        var signing: (AppTokenIssuer, Int) { (current, generation) }
        func use(_ issuer: AppTokenIssuer) {
            current = issuer
            generation += 1
        }
    }

    actor Statuses {
        var all: [Int] = []
        private var generations: Set<Int> = []
        func add(_ status: Int, signedBy generation: Int) {
            all.append(status)
            generations.insert(generation)
        }
        /// Whether a request signed by that key was answered (the backend's switch is done).
        func answered(signedBy generation: Int) -> Bool { generations.contains(generation) }
    }
}
