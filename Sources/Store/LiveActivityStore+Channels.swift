import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A sale's broadcast channels (`activity_channels`, `channel_pushes`; DESIGN, contract 10): the channels it made, and each
/// step's pushes to them, claimed under the run's lease as deliveries are.
extension LiveActivityStore {
    /// The sale's channels not yet deleted.
    public func channels(sale: Int64) async throws -> [ChannelKey: String] {
        var found: [ChannelKey: String] = [:]
        for try await (app, environment, channel) in try await client.query("""
            SELECT app, environment, channel_id FROM activity_channels WHERE campaign_id = \(sale) AND deleted_at IS NULL
            """, logger: logger).decode((String, String, String).self) {
            found[ChannelKey(app: app, environment: APNsEnvironment(rawValue: environment) ?? .production)] = channel
        }
        return found
    }

    /// The apps and environments of the devices with a push-to-start token in `apps` (nil: any
    /// app): each needs a channel of the sale.
    public func channelsNeeded(apps: [String]?) async throws -> [ChannelKey] {
        var keys: [ChannelKey] = []
        for try await (app, environment) in try await client.query("""
            SELECT DISTINCT dv.app, dv.environment
            FROM push_to_start_tokens p JOIN devices dv ON dv.id = p.device_id
            WHERE dv.invalidated_at IS NULL AND (\(apps)::text[] IS NULL OR dv.app = ANY(\(apps)::text[]))
            """, logger: logger).decode((String, String).self) {
            if let environment = APNsEnvironment(rawValue: environment) { keys.append(ChannelKey(app: app, environment: environment)) }
        }
        return keys.sorted()
    }

    /// Devices of `apps` (nil: any app), not invalidated, with a push-to-start token.
    public func pushToStartDevices(apps: [String]?) async throws -> Int {
        for try await n in try await client.query("""
            SELECT count(*) FROM push_to_start_tokens p JOIN devices dv ON dv.id = p.device_id
            WHERE dv.invalidated_at IS NULL AND (\(apps)::text[] IS NULL OR dv.app = ANY(\(apps)::text[]))
            """, logger: logger).decode(Int64.self) {
            return Int(n)
        }
        return 0
    }

    /// Records a channel made for the sale. False: another run recorded one for that app and
    /// environment first (the caller deletes its own, and uses the one recorded).
    public func recordChannel(sale: Int64, key: ChannelKey, channel: String) async throws -> Bool {
        for try await _ in try await client.query("""
            INSERT INTO activity_channels (campaign_id, app, environment, channel_id)
            VALUES (\(sale), \(key.app), \(key.environment.rawValue), \(channel))
            ON CONFLICT (campaign_id, app, environment) DO NOTHING RETURNING 1
            """, logger: logger) { return true }
        return false
    }

    /// Claims the step's channel pushes that are due: queued ones whose retry time has come, and
    /// those in flight under a run whose lease lapsed (a killed run's). A claim a step's next
    /// step has superseded is expired instead: nothing older goes after something newer.
    public func claimChannelPushes(step: Int64, run: Int64) async throws -> [ChannelPush] {
        try await client.withTransaction(logger: logger) { conn in
            // A step whose earlier step is in flight, or that a later one superseded, claims
            // nothing (`herald_step_state`); the sale's lock is held until this transaction ends.
            var state = "clear"
            for try await s in try await conn.query("SELECT herald_step_state(\(step))", logger: logger).decode(String.self) {
                state = s
            }
            guard state == "clear" else { return [] }
            try await conn.query("""
                UPDATE channel_pushes cp SET status = 'expired', last_error = 'superseded by the next step before it was sent',
                       updated_at = now()
                FROM campaigns c WHERE c.id = cp.campaign_id AND cp.campaign_id = \(step)
                  AND cp.status IN ('queued', 'in_flight') AND c.expires_at <= now()
                  AND (cp.status = 'queued' OR NOT EXISTS (
                      SELECT 1 FROM runs r WHERE r.id = cp.claimed_by AND r.status = 'running' AND r.lease_expires_at >= now()))
                """, logger: logger)
            var claimed: [ChannelPush] = []
            for try await (app, environment, channel, attempts) in try await conn.query("""
                UPDATE channel_pushes cp SET status = 'in_flight', claimed_by = \(run), attempts = cp.attempts + 1, updated_at = now()
                WHERE cp.campaign_id = \(step)
                  AND ((cp.status = 'queued' AND cp.next_attempt_at <= now())
                       OR (cp.status = 'in_flight' AND cp.claimed_by IS DISTINCT FROM \(run) AND NOT EXISTS (
                           SELECT 1 FROM runs r WHERE r.id = cp.claimed_by AND r.status = 'running' AND r.lease_expires_at >= now())))
                RETURNING cp.app, cp.environment, cp.channel_id, cp.attempts
                """, logger: logger).decode((String, String, String, Int32).self) {
                let key = ChannelKey(app: app, environment: APNsEnvironment(rawValue: environment) ?? .production)
                claimed.append(ChannelPush(key: key, channel: channel, attempts: Int(attempts)))
            }
            return claimed.sorted { $0.key < $1.key }
        }
    }

    /// Records what became of a step's push to a channel this run holds.
    public func recordChannelPush(step: Int64, key: ChannelKey, run: Int64, outcome: ChannelPushOutcome) async throws {
        switch outcome {
        case .sent(let requestID):
            try await client.query("""
                UPDATE channel_pushes SET status = 'sent', sent_at = now(), apns_request_id = \(requestID), last_error = NULL,
                       updated_at = now()
                WHERE campaign_id = \(step) AND app = \(key.app) AND environment = \(key.environment.rawValue) AND claimed_by = \(run)
                """, logger: logger)
        case .retry(let after, let error):
            let seconds = Double(after.components.seconds) + Double(after.components.attoseconds) / 1e18
            try await client.query("""
                UPDATE channel_pushes SET status = 'queued', next_attempt_at = now() + make_interval(secs => \(seconds)),
                       last_error = \(error), updated_at = now()
                WHERE campaign_id = \(step) AND app = \(key.app) AND environment = \(key.environment.rawValue) AND claimed_by = \(run)
                  AND status = 'in_flight'
                """, logger: logger)
        case .failed(let reason):
            try await client.query("""
                UPDATE channel_pushes SET status = 'failed', last_error = \(reason), updated_at = now()
                WHERE campaign_id = \(step) AND app = \(key.app) AND environment = \(key.environment.rawValue) AND claimed_by = \(run)
                """, logger: logger)
        }
    }

    /// When the step's next channel push is due (nil: none is left to send, or a later step
    /// superseded this one); a step waiting for an earlier one is looked at again after
    /// `DeliveryLedger.stepPoll`.
    public func nextChannelPush(step: Int64) async throws -> Date? {
        let poll = DeliveryLedger.stepPoll.inSeconds
        for try await next in try await client.query("""
            SELECT CASE s.state WHEN 'superseded' THEN NULL
                                WHEN 'waits' THEN greatest(q.next, now() + make_interval(secs => \(poll))) ELSE q.next END
            FROM (SELECT min(next_attempt_at) AS next FROM channel_pushes
                  WHERE campaign_id = \(step) AND status IN ('queued', 'in_flight')) q,
                 LATERAL (SELECT herald_step_state(\(step)) AS state) s
            """, logger: logger).decode(Date?.self) {
            return next
        }
        return nil
    }

    /// Channels of sales whose dismissal date has passed (or that were cancelled), not yet deleted.
    public func channelsToDelete() async throws -> [ChannelToDelete] {
        var found: [ChannelToDelete] = []
        for try await (sale, app, environment, channel) in try await client.query("""
            SELECT ac.campaign_id, ac.app, ac.environment, ac.channel_id
            FROM activity_channels ac JOIN campaigns s ON s.id = ac.campaign_id
            WHERE ac.deleted_at IS NULL
              AND (s.status IN ('cancelled', 'failed')
                   OR coalesce((SELECT max(st.expires_at) FROM campaigns st WHERE st.sale_id = s.id), s.expires_at) <= now())
            ORDER BY 1, 2, 3
            """, logger: logger).decode((Int64, String, String, String).self) {
            let key = ChannelKey(app: app, environment: APNsEnvironment(rawValue: environment) ?? .production)
            found.append(ChannelToDelete(sale: sale, key: key, channel: channel))
        }
        return found
    }

    public func markChannelDeleted(_ channel: ChannelToDelete) async throws {
        try await client.query("""
            UPDATE activity_channels SET deleted_at = now()
            WHERE campaign_id = \(channel.sale) AND app = \(channel.key.app) AND environment = \(channel.key.environment.rawValue)
            """, logger: logger)
    }
}
