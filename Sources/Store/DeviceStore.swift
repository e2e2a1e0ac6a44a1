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
            for try await id in try await conn.query("""
                INSERT INTO users (external_id, locale, time_zone, attributes, opted_out_at)
                VALUES (\(r.user), coalesce(\(r.locale)::text, 'en'), coalesce(\(r.timeZone)::text, 'UTC'),
                        coalesce(\(attributes)::jsonb, '{}'), CASE WHEN \(r.marketing)::bool = false THEN now() END)
                ON CONFLICT (external_id) DO UPDATE SET
                    time_zone = coalesce(\(r.timeZone)::text, users.time_zone),
                    attributes = users.attributes || coalesce(\(attributes)::jsonb, '{}'),
                    opted_out_at = CASE WHEN \(r.marketing)::bool IS NULL THEN users.opted_out_at
                                        WHEN \(r.marketing)::bool THEN NULL
                                        ELSE coalesce(users.opted_out_at, now()) END
                RETURNING id
                """, logger: logger).decode(Int64.self) {
                userID = id
            }
            // The key columns are written only when a key comes with the
            // registration, and never read: the intake's role may not read keys.
            // (From the binds, not EXCLUDED: reading EXCLUDED.public_key needs
            // the right to read the column.)
            let keySet = r.publicKey != nil ? "public_key = $4, key_id = $5," : ""
            var deviceID: Int64 = 0
            var created = false
            var insert = PostgresQuery(unsafeSQL: "")
            insert.sql = """
                INSERT INTO devices (user_id, token, environment, public_key, key_id, app_version, locale,
                                     config_etag, config_reported_at, last_seen_at, registered_at, app)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CASE WHEN $8::text IS NOT NULL THEN now() END, now(),
                        least(to_timestamp($9), now()), $10)
                ON CONFLICT (token) DO UPDATE SET
                    user_id = EXCLUDED.user_id,
                    environment = EXCLUDED.environment,
                    \(keySet)
                    app_version = coalesce(EXCLUDED.app_version, devices.app_version),
                    locale = coalesce(EXCLUDED.locale, devices.locale),
                    config_etag = coalesce(EXCLUDED.config_etag, devices.config_etag),
                    config_reported_at = coalesce(EXCLUDED.config_reported_at, devices.config_reported_at),
                    last_seen_at = now(),
                    registered_at = EXCLUDED.registered_at,
                    invalidated_at = NULL,
                    invalid_reason = NULL
                RETURNING id
                """
            insert.binds.append(userID)
            insert.binds.append(r.token)
            insert.binds.append(r.environment.rawValue)
            insert.binds.append(r.publicKey)
            insert.binds.append(r.keyID)
            insert.binds.append(r.appVersion)
            insert.binds.append(r.locale)
            insert.binds.append(r.configETag)
            insert.binds.append(issued)
            insert.binds.append(r.app)
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
        let rows = try await client.query("""
            WITH dv AS (
                SELECT dv.id, u.external_id FROM devices dv JOIN users u ON u.id = dv.user_id
                WHERE dv.token = \(token) AND dv.app = \(app)
            ), upd AS (
                UPDATE devices SET invalidated_at = coalesce(devices.invalidated_at, now()),
                                   invalid_reason = coalesce(devices.invalid_reason, 'unregistered by the app')
                FROM dv WHERE devices.id = dv.id AND dv.external_id = \(user)
                RETURNING devices.id
            )
            SELECT dv.external_id = \(user) FROM dv
            """, logger: logger)
        for try await mine in rows.decode(Bool.self) {
            return mine ? .unregistered : .otherUser
        }
        return .unknownDevice
    }
}
