import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Device registration in PostgreSQL: users are created on first sight, a
/// token moves to the user who registers it last, and a token APNs declared
/// invalid at T comes back only with a registration issued after T.
public struct DeviceStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public enum Registered: Sendable, Hashable {
        /// Stored; `created` when the token was new. `movedFrom` names the
        /// previous owner's external id when the token changed hands.
        case stored(deviceID: Int64, created: Bool, movedFrom: String?)
        /// The token was declared invalid at `since`, after this registration
        /// was issued: nothing changed.
        case invalidatedAfter(since: Date)
        /// The token belongs to a device of another app: nothing changed
        /// (one app's backend cannot take another app's devices).
        case otherApp(String)
    }

    /// Stores a registration issued (by the app's backend) at `issuedAt`, in
    /// one transaction.
    public func register(_ r: DeviceRegistration, issuedAt: Date) async throws -> Registered {
        let logger = self.logger
        let attributes = r.attributes.map { JSONValue.object($0).jsonText }
        let issued = issuedAt.timeIntervalSince1970
        return try await client.withTransaction(logger: logger) { conn in
            // The device as it is, locked against a concurrent registration.
            var existing: (id: Int64, owner: String, invalidatedAt: Date?, app: String)?
            for try await (id, owner, invalidated, app) in try await conn.query("""
                SELECT dv.id, u.external_id, dv.invalidated_at, dv.app
                FROM devices dv JOIN users u ON u.id = dv.user_id
                WHERE dv.token = \(r.token) FOR UPDATE OF dv
                """, logger: logger).decode((Int64, String, Date?, String).self) {
                existing = (id, owner, invalidated, app)
            }
            if let existing, existing.app != r.app { return .otherApp(existing.app) }
            // Apple's rule: a token invalid since T is valid again only when
            // registered after T (to the second: JWT times have no fraction).
            if let since = existing?.invalidatedAt, issuedAt.timeIntervalSince1970 < since.timeIntervalSince1970.rounded(.down) {
                return .invalidatedAfter(since: since)
            }
            var userID: Int64 = 0
            for try await id in try await conn.query(try SQLQueries.named("devices/register-user").query([
                "user": .value(r.user), "locale": .value(r.locale), "time_zone": .value(r.timeZone),
                "attributes": .value(attributes), "marketing": .value(r.marketing),
            ]), logger: logger).decode(Int64.self) {
                userID = id
            }
            // The key columns are written only when a key comes with the registration.
            let keySet = r.publicKey != nil ? "public_key = :public_key, key_id = :key_id," : ""
            var deviceID: Int64 = 0
            var created = false
            let insert = try SQLQueries.named("devices/register-device").filling(["key_set": keySet]).query([
                "user_id": .value(userID), "token": .value(r.token), "environment": .value(r.environment.rawValue),
                "public_key": .value(r.publicKey), "key_id": .value(r.keyID), "app_version": .value(r.appVersion),
                "locale": .value(r.locale), "config_etag": .value(r.configETag), "issued": .value(issued), "app": .value(r.app),
            ])
            // New when no row had the token when it was looked up (two first
            // registrations of one token at the same moment may both say so;
            // the row is the same either way). Not read from xmax: that needs
            // table-wide SELECT, which the intake's role does not have.
            for try await id in try await conn.query(insert, logger: logger).decode(Int64.self) {
                deviceID = id
                created = existing == nil
            }
            // What was queued for the previous user is skipped when a run
            // claims it (the ledger is the job's to write, not the intake's).
            let movedFrom = existing.flatMap { $0.owner != r.user ? $0.owner : nil }
            return .stored(deviceID: deviceID, created: created, movedFrom: movedFrom)
        }
    }

    public enum Unregistered: Sendable, Hashable {
        case unregistered
        case unknownDevice
        /// The token is registered to another user.
        case otherUser
    }

    /// Logout: the device is no longer targeted (its ledger and replies stay)
    /// until it registers again.
    public func unregister(token: String, user: String, app: String = AppRecord.defaultName) async throws -> Unregistered {
        let rows = try await client.query(try SQLQueries.named("devices/unregister").query([
            "token": .value(token), "app": .value(app), "user": .value(user),
        ]), logger: logger)
        for try await mine in rows.decode(Bool.self) {
            return mine ? .unregistered : .otherUser
        }
        return .unknownDevice
    }
}
