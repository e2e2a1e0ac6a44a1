import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Flash sales as Live Activities (`herald_sale_steps`, `live_activities`; DESIGN, contract 10): the steps a sale makes when it
/// starts, each step's audience, and what apps register (push-to-start tokens, running
/// activities and what each device confirmed).
public struct LiveActivityStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Makes the sale's steps after its start, once (a second call makes none): step n due at
    /// `at[n-1]`, ending at `until[n-1]`. Returns how many this call made.
    @discardableResult
    public func makeSteps(sale: Int64, at: [Date], until: [Date]) async throws -> Int {
        for try await made in try await client.query(
            "SELECT herald_sale_steps(\(sale), \(at)::timestamptz[], \(until)::timestamptz[])", logger: logger
        ).decode(Int32.self) {
            return Int(made)
        }
        return 0
    }

    /// A step's audience, written once when the step falls due (one statement: the step's row,
    /// locked, says it was not yet): every device whose activity of the sale registered an update
    /// token and has not ended, and one push to each of the sale's channels (devices on a channel
    /// get the channel's one push; an activity that registers later was started with the state of its day).
    public func snapshotStep(_ step: Int64, sale: Int64, start: Bool) async throws -> SnapshotResult {
        let logger = self.logger
        _ = try await AudienceStore(client: client, logger: logger).ensurePartition(campaign: step)
        let result = try await client.withTransaction(logger: logger) { conn in
            // Written once: the step's row, locked, says whether it was (no row of it is looked up).
            var pending = false
            for try await fresh in try await conn.query("""
                SELECT snapshot_at IS NULL AND status IN ('scheduled', 'running') FROM campaigns WHERE id = \(step) FOR UPDATE
                """, logger: logger).decode(Bool.self) { pending = fresh }
            guard pending, start else { return SnapshotResult() }
            try await conn.query("SET LOCAL jit = off", logger: logger)
            var inserted = 0
            for try await n in try await conn.query(
                try SQLQueries.named("live-activities/snapshot-step").query(["step": .value(step), "sale": .value(sale)]),
                logger: logger
            ).decode(Int64.self) { inserted = Int(n) }
            // The sale's channels each get the step once (`channel_pushes`).
            try await conn.query(
                try SQLQueries.named("live-activities/queue-step-channel-pushes").query(["step": .value(step), "sale": .value(sale)]),
                logger: logger
            )
            try await conn.query("""
                UPDATE campaigns SET status = 'running', started_at = coalesce(started_at, now()), snapshot_at = now()
                WHERE id = \(step)
                """, logger: logger)
            return SnapshotResult(inserted: inserted, queued: inserted)
        }
        // The claims are planned with statistics that know the step (as after a large slice).
        if result.inserted >= AudienceStore.analyzeAfter {
            try await client.query("SELECT herald_ledger_analyze(\(step))", logger: logger)
        }
        return result
    }

    /// What is left of the sale's stock, as the marketer's system last wrote it (nil: never).
    public func stockLeft(sale: Int64) async throws -> Int? {
        for try await n in try await client.query("SELECT stock_left FROM sale_stock WHERE campaign_id = \(sale)",
                                                   logger: logger).decode(Int32.self) {
            return Int(n)
        }
        return nil
    }

    // MARK: What apps register

    public enum Registered: Sendable, Hashable {
        case stored(created: Bool)
        /// The device token is not registered to that user and app.
        case unknownDevice
        /// The campaign is not a Live Activity sale.
        case unknownCampaign
    }

    /// The device's id, when `token` is registered to `user` in `app`.
    private func device(token: String, user: String, app: String, on conn: PostgresConnection) async throws -> Int64? {
        for try await id in try await conn.query("""
            SELECT dv.id FROM devices dv JOIN users u ON u.id = dv.user_id
            WHERE dv.token = \(token) AND u.external_id = \(user) AND dv.app = \(app)
            """, logger: logger).decode(Int64.self) {
            return id
        }
        return nil
    }

    /// The device's push-to-start token for Herald's sales (one per device; a new one replaces it).
    public func registerPushToStart(device token: String, user: String, app: String, pushToStart: String) async throws -> Registered {
        try await client.withTransaction(logger: logger) { conn in
            guard let id = try await device(token: token, user: user, app: app, on: conn) else { return .unknownDevice }
            var created = false
            for try await inserted in try await conn.query(
                try SQLQueries.named("live-activities/register-push-to-start").query(["device": .value(id), "token": .value(pushToStart)]),
                logger: logger
            ).decode(Bool.self) { created = inserted }
            return .stored(created: created)
        }
    }

    /// A running activity of `campaign` on the device: its update token or its channel, who
    /// started it, and the step it shows (what the device confirmed; it never goes back).
    public func registerActivity(device token: String, user: String, app: String, campaign: Int64,
                                 updateToken: String?, channel: String?, startedBy: String, step: Int?) async throws -> Registered {
        try await client.withTransaction(logger: logger) { conn in
            guard let id = try await device(token: token, user: user, app: app, on: conn) else { return .unknownDevice }
            var sale = false
            for try await _ in try await conn.query("SELECT 1 FROM campaigns WHERE id = \(campaign) AND live_activity IS NOT NULL",
                                                     logger: logger) { sale = true }
            guard sale else { return .unknownCampaign }
            let confirmed = step.map(Int32.init)
            var created = false
            let query = try SQLQueries.named("live-activities/register-activity").query([
                "campaign": .value(campaign), "device": .value(id), "update_token": .value(updateToken),
                "channel": .value(channel), "started_by": .value(startedBy), "confirmed": .value(confirmed),
            ])
            for try await inserted in try await conn.query(query, logger: logger).decode(Bool.self) { created = inserted }
            return .stored(created: created)
        }
    }

    public enum Ended: Sendable, Hashable { case ended, unknownDevice, unknownActivity }

    /// The activity ended or was dismissed on the device: no further step goes to it.
    public func endActivity(device token: String, user: String, app: String, campaign: Int64) async throws -> Ended {
        try await client.withTransaction(logger: logger) { conn in
            guard let id = try await device(token: token, user: user, app: app, on: conn) else { return .unknownDevice }
            var found = false
            for try await _ in try await conn.query("""
                UPDATE live_activities SET ended_at = coalesce(ended_at, now())
                WHERE campaign_id = \(campaign) AND device_id = \(id) RETURNING 1
                """, logger: logger) { found = true }
            return found ? .ended : .unknownActivity
        }
    }
}
