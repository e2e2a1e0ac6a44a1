import AppServer
import Crypto
import ExtensionKit
import Foundation
import Logging
import PostgresNIO
import Store

/// The shop's backend after the campaigns: some users buy, and the backend
/// reports each purchase to `POST /v1/conversions` with its token for that
/// user. Who buys is drawn by a hash of the user, so a demo is reproducible,
/// and the poster works: a user it reached who tapped "I love it~" buys
/// more often than one it reached who did not, who buys a little more often
/// than one held out from it (analyst.lift measures it).
enum Purchases {
    /// Chance of a purchase within the attribution window.
    static let lovedIt = 0.40, reached = 0.12, heldOut = 0.08

    /// Posts the purchases of the users of campaigns with a conversion event; returns how many were stored.
    static func post(client: Database, intake: URL, issuer: AppTokenIssuer, logger: Logger) async throws -> Int {
        let rows = try await client.query(try SQLQueries.named("demo/purchase-candidates").query([:]), logger: logger)
        var buyers: [String] = []
        for try await (user, treated, loved) in rows.decode((String, Bool, Bool).self) {
            let chance = !treated ? heldOut : loved ? lovedIt : reached
            if draw(user) < chance { buyers.append(user) }
        }
        var stored = 0
        for user in buyers where try await report("purchase", of: user, key: "demo-order-\(user)", amount: "59.00",
                                                  intake: intake, issuer: issuer) {
            stored += 1
        }
        return stored
    }

    /// The backend reports one event of `user` (POST /v1/conversions with its token for
    /// that user); true when it was stored (201).
    static func report(_ event: String, of user: String, key: String, amount: String? = nil,
                       intake: URL, issuer: AppTokenIssuer) async throws -> Bool {
        var body: [String: String] = ["user": user, "event": event, "occurred_at": Date().ISO8601Format(), "idempotency_key": key]
        if let amount {
            body["amount"] = amount
            body["currency"] = "EUR"
        }
        let request = ReplyHTTPRequest(
            url: intake.appending(path: "v1/conversions"), method: "POST",
            headers: [("Content-Type", "application/json"),
                      ("Authorization", "Bearer \(try await issuer.token(user: user))")],
            body: try JSONEncoder().encode(body))
        return try await DemoHTTP.send(request).status == 201
    }

    /// 0 ≤ x < 1, by the user.
    static func draw(_ user: String) -> Double {
        let bytes = Array(SHA256.hash(data: Data("herald demo purchase \(user)".utf8)))
        let n = bytes.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return Double(n) / 4_294_967_296
    }
}
