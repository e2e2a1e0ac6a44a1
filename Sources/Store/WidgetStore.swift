import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Widget pushes (`widget_tokens`, `herald_widget_push`; DESIGN, contract 10, "Widget pushes"): each device's widget token,
/// and a campaign's widget push, a campaign row of its own made when the campaign starts, whose
/// audience is the campaign's devices with a widget token.
public struct WidgetStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Makes the widget push of `campaign`, due now, once. Returns its id when this call made it.
    public func makeWidgetPush(campaign: Int64) async throws -> Int64? {
        for try await id in try await client.query("SELECT herald_widget_push(\(campaign))", logger: logger).decode(Int64?.self) {
            return id
        }
        return nil
    }

    /// The widget push's audience, written once (its row, locked, says whether it was): the
    /// devices of its campaign's ledger that the campaign reaches (not held out, skipped or
    /// cancelled) and that registered a widget token. Nil while the campaign's own audience is
    /// still being written: the push waits for it.
    public func snapshot(_ push: Int64, of campaign: Int64, start: Bool) async throws -> SnapshotResult? {
        _ = try await AudienceStore(client: client, logger: logger).ensurePartition(campaign: push)
        return try await client.withTransaction(logger: logger) { conn -> SnapshotResult? in
            var pending = false
            for try await fresh in try await conn.query("""
                SELECT snapshot_at IS NULL AND status IN ('scheduled', 'running') FROM campaigns WHERE id = \(push) FOR UPDATE
                """, logger: logger).decode(Bool.self) { pending = fresh }
            guard pending, start else { return SnapshotResult() }
            var written = false
            for try await done in try await conn.query("""
                SELECT snapshot_at IS NOT NULL AND snapshot_through IS NULL FROM campaigns WHERE id = \(campaign)
                """, logger: logger).decode(Bool.self) { written = done }
            guard written else { return nil }
            var inserted = 0
            for try await n in try await conn.query("""
                WITH ins AS (
                    INSERT INTO deliveries (campaign_id, device_id, user_id)
                    SELECT \(push), d.device_id, d.user_id
                    FROM deliveries d JOIN widget_tokens wt ON wt.device_id = d.device_id
                    WHERE d.campaign_id = \(campaign) AND d.kind = 'campaign'
                      AND d.status NOT IN ('skipped', 'held_out', 'cancelled', 'invalid')
                    ORDER BY d.device_id
                    RETURNING 1
                )
                SELECT count(*)::bigint FROM ins
                """, logger: logger).decode(Int64.self) { inserted = Int(n) }
            try await conn.query("""
                UPDATE campaigns SET status = 'running', started_at = coalesce(started_at, now()), snapshot_at = now()
                WHERE id = \(push)
                """, logger: logger)
            return SnapshotResult(inserted: inserted, queued: inserted)
        }
    }

    public enum Registered: Sendable, Hashable {
        case stored(created: Bool)
        /// The device token is not registered to that user and app.
        case unknownDevice
    }

    /// The device's widget token (one per device; a new one replaces it).
    public func register(device token: String, user: String, app: String, widgetToken: String) async throws -> Registered {
        for try await created in try await client.query("""
            WITH dev AS (
                SELECT dv.id FROM devices dv JOIN users u ON u.id = dv.user_id
                WHERE dv.token = \(token) AND u.external_id = \(user) AND dv.app = \(app)
            )
            INSERT INTO widget_tokens (device_id, token) SELECT id, \(widgetToken) FROM dev
            ON CONFLICT (device_id) DO UPDATE SET token = EXCLUDED.token, updated_at = now()
            RETURNING xmax = 0
            """, logger: logger).decode(Bool.self) {
            return .stored(created: created)
        }
        return .unknownDevice
    }
}
