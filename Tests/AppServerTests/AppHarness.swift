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

/// The app's backend and Herald, over real HTTP on a real database.
struct AppHarness: Sendable {
    let issuer: AppTokenIssuer
    let db: Database

    /// Limits that leave room for a test's many requests about one device.
    static var roomy: AppServerLimits {
        var limits = AppServerLimits()
        limits.perDevice = .init(10_000, per: .seconds(60))
        return limits
    }

    static func with(algorithm: AppTokenVerifier.Algorithm = .es256, limits: AppServerLimits = roomy,
                     _ body: @Sendable (AppHarness, any TestClientProtocol) async throws -> Void) async throws {
        let issuer = try await AppTokenIssuer(algorithm: algorithm)
        let verifier = try await AppTokenVerifier(publicKeyPEM: issuer.publicKeyPEM)
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            let intake = ReplyIntake(store: ReplyStore(client: client, logger: TestDatabase.logger),
                                     tokens: ReplyTokens(secret: IntakeTests.secret), logger: TestDatabase.logger)
            let endpoints = AppEndpoints(client: client, verifier: verifier, logger: TestDatabase.logger)
            let app = Application(router: AppHTTPServer.router(intake: intake, app: endpoints, limits: limits))
            try await app.test(.live) { http in
                try await body(AppHarness(issuer: issuer, db: client), http)
            }
        }
    }

    static func token(_ n: Int) -> String {
        SHA256.hash(data: Data("registration test \(n)".utf8)).map { String(format: "%02x", $0) }.joined()
    }

    static func body(_ fields: [String: Any]) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: fields)) ?? Data(), as: UTF8.self)
    }

    static func device(user: String, locale: String? = "fr-CA", extra: [String: Any] = [:]) -> [String: Any] {
        var f: [String: Any] = ["environment": "sandbox", "user": user, "time_zone": "Europe/Paris", "app_version": "3.1"]
        if let locale { f["locale"] = locale }
        for (k, v) in extra { f[k] = v }
        return f
    }

    /// PUT (or DELETE) with a bearer token; the status and the JSON answer.
    func send(_ http: any TestClientProtocol, _ method: HTTPRequest.Method = .put, token: String, body: String? = nil,
              bearer: String?) async throws -> (Int, [String: String]) {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        return try await http.execute(uri: "/v1/devices/\(token)", method: method, headers: headers,
                                      body: body.map { ByteBuffer(string: $0) }) { response in
            let object = (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: String] ?? [:]
            if response.status.code >= 400 {
                #expect(response.headers[.contentType] == "application/json")
            }
            return (response.status.code, object)
        }
    }

    func register(_ http: any TestClientProtocol, token: String, _ fields: [String: Any],
                  issuedAt: Date = Date()) async throws -> (Int, [String: String]) {
        let user = fields["user"] as? String ?? ""
        return try await send(http, token: token, body: Self.body(fields),
                              bearer: try await issuer.token(user: user, issuedAt: issuedAt, lifetime: 3600))
    }
}
