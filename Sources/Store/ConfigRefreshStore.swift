import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// The ledger statements of config refresh pushes: planned per campaign with
/// one set-based statement, claimed like any delivery (`FOR UPDATE SKIP
/// LOCKED`), recorded with `DeliveryLedger.record`.
public struct ConfigRefreshStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Scheduled campaigns with a category whose `send_at` is still ahead, at
    /// most `lead` away. (A campaign already due is sent at once: a refresh
    /// push could not reach the app before it.)
    public func upcoming(lead: TimeInterval) async throws -> [UpcomingCategoryCampaign] {
        let rows = try await client.query("""
            SELECT c.id, c.name, c.category_id, s.name, coalesce(s.rule, '{}'::jsonb)::text, c.apps
            FROM campaigns c LEFT JOIN segments s ON s.id = c.segment_id
            WHERE c.status = 'scheduled' AND c.category_id IS NOT NULL
              AND c.send_at > now() AND c.send_at <= now() + make_interval(secs => \(lead))
              AND (c.expires_at IS NULL OR c.expires_at > now())
            ORDER BY c.send_at, c.id
            """, logger: logger)
        var out: [UpcomingCategoryCampaign] = []
        for try await (id, name, category, segment, rule, apps) in rows.decode((Int64, String, String, String?, String, [String]?).self) {
            let json = (try? JSONDecoder().decode(JSONValue.self, from: Data(rule.utf8))) ?? .object([:])
            out.append(UpcomingCategoryCampaign(campaignID: id, name: name, categoryID: category, segmentName: segment,
                                                segmentRule: json, apps: apps))
        }
        return out
    }

    /// The apps and locales (the device's own, else its user's) of the
    /// audience's devices: each pair has a document of its own.
    public func audienceLocales(segmentRule: JSONValue, apps: [String]?) async throws -> [AppLocale] {
        var binds = PostgresBindings(capacity: 8)
        binds.append(apps)
        let segment = try SegmentCompiler(firstPlaceholder: binds.count + 1, deviceAlias: "dv", userAlias: "u").compile(segmentRule)
        binds.append(segment: segment)
        let query = PostgresQuery(unsafeSQL: """
            SELECT DISTINCT dv.app, coalesce(dv.locale, u.locale)
            FROM devices dv JOIN users u ON u.id = dv.user_id
            WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
              AND ($1::text[] IS NULL OR dv.app = ANY ($1::text[])) AND (\(segment.sql))
            """, binds: binds)
        var out: [AppLocale] = []
        for try await (app, locale) in try await client.query(query, logger: logger).decode((String, String).self) {
            out.append(AppLocale(app: app, locale: locale))
        }
        return out
    }

    /// Queues one refresh push per audience device that does not have the
    /// category's current definition (its reported config lacks it, or it
    /// never reported one), at most once per device and config version.
    /// `current` maps each audience app and locale to its current document's
    /// ETag and the hash of the category in that document; a device of
    /// another app or locale gets none.
    /// Returns the rows queued now.
    public func plan(campaign: Int64, category: String, current: [AppLocale: (etag: String, categoryHash: String)],
                     segmentRule: JSONValue) async throws -> Int {
        guard !current.isEmpty else { return 0 }
        let keys = Array(current.keys)
        var binds = PostgresBindings(capacity: 16)
        binds.append(campaign)
        binds.append(category)
        binds.append(keys.map(\.app))
        binds.append(keys.map(\.locale))
        binds.append(keys.map { current[$0]?.etag ?? "" })
        binds.append(keys.map { current[$0]?.categoryHash ?? "" })
        // The segment's condition, compiled for this statement: its binds follow the five above.
        let segment = try SegmentCompiler(firstPlaceholder: binds.count + 1, deviceAlias: "dv", userAlias: "u")
            .compile(segmentRule)
        binds.append(segment: segment)
        let query = PostgresQuery(unsafeSQL: """
            WITH ins AS (
                INSERT INTO deliveries (kind, config_etag, prompted_by, device_id, user_id, status, refresh_open)
                SELECT 'config_refresh', m.etag, $1, dv.id, u.id, 'queued', true
                FROM devices dv
                JOIN users u ON u.id = dv.user_id
                JOIN unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS m(app, locale, etag, hash)
                     ON m.app = dv.app AND m.locale = coalesce(dv.locale, u.locale)
                WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM config_documents cd
                                  WHERE cd.etag = dv.config_etag AND cd.categories ->> $2 = m.hash)
                  AND (\(segment.sql))
                ON CONFLICT (campaign_id, device_id, config_etag) WHERE kind = 'config_refresh' DO NOTHING
                RETURNING 1
            )
            SELECT count(*)::bigint FROM ins
            """, binds: binds)
        for try await n in try await client.query(query, logger: logger).decode(Int64.self) { return Int(n) }
        return 0
    }


    /// Claims up to `limit` queued refresh pushes for `run`. Rows whose device
    /// was invalidated meanwhile are skipped.
    /// Like campaign deliveries, a claim is a lease of `lease` that the run
    /// renews; a lapsed lease (a run that died) may be claimed again.
    public func claim(run: Int64, limit: Int, lease: Duration, excludingApps apps: [String] = []) async throws -> [ClaimedRefresh] {
        let seconds = Double(lease.components.seconds)
        let rows = try await client.query("""
            WITH live AS (
                UPDATE runs SET lease_expires_at = greatest(lease_expires_at, now() + make_interval(secs => \(seconds))),
                    claimed_refreshes = true
                WHERE id = \(run) AND status = 'running'
                RETURNING id
            ), picked AS (
                SELECT d.id FROM deliveries d
                WHERE d.campaign_id IS NULL AND d.refresh_open
                  AND \(unescaped: DeliveryLedger.claimable("d"))
                  AND \(unescaped: DeliveryLedger.notOfApps("d", apps))
                  AND EXISTS (SELECT 1 FROM live)
                ORDER BY d.id LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            ), upd AS (
                UPDATE deliveries d SET
                    status = CASE WHEN dv.invalidated_at IS NOT NULL THEN 'skipped' ELSE 'in_flight' END,
                    refresh_open = CASE WHEN dv.invalidated_at IS NULL THEN true END,
                    last_error = CASE WHEN dv.invalidated_at IS NOT NULL
                                      THEN 'device invalidated: ' || coalesce(dv.invalid_reason, 'unknown')
                                      ELSE d.last_error END,
                    claimed_by = \(run),
                    lease_expires_at = now() + make_interval(secs => \(seconds)),
                    apns_id = coalesce(d.apns_id, herald_apns_id(d.id, (SELECT p.prefix FROM apns_id_prefix p))),
                    updated_at = now()
                FROM picked, devices dv
                WHERE d.campaign_id IS NULL AND d.id = picked.id AND dv.id = d.device_id
                RETURNING d.id, d.device_id, dv.token, dv.environment, d.config_etag, d.apns_id, d.status, d.prompted_by, d.attempts, dv.app
            )
            SELECT upd.id, upd.device_id, upd.token, upd.environment, upd.config_etag, upd.apns_id, upd.attempts, upd.app,
                   extract(epoch FROM coalesce(c.expires_at, c.send_at + interval '1 day'))::bigint
            FROM upd LEFT JOIN campaigns c ON c.id = upd.prompted_by
            WHERE upd.status = 'in_flight' ORDER BY upd.id
            """, logger: logger)
        var out: [ClaimedRefresh] = []
        for try await (id, device, token, env, etag, apnsID, attempts, app, expiration) in rows.decode(
            (Int64, Int64, String, APNsEnvironment, String, UUID, Int32, String, Int64?).self) {
            out.append(ClaimedRefresh(deliveryID: id, deviceID: device, deviceToken: token, environment: env, etag: etag,
                                      apnsID: apnsID, expiration: expiration.map { Int($0) }, attempts: Int(attempts),
                                      app: app))
        }
        return out
    }

    /// How long until the next queued refresh push may be sent, when one is
    /// queued at all (a retry's backoff).
    public func nextDue(excludingApps apps: [String] = []) async throws -> Duration? {
        let rows = try await client.query("""
            SELECT greatest(extract(epoch FROM min(not_before) - now()), 0)::float8
            FROM deliveries d WHERE d.campaign_id IS NULL AND d.refresh_open AND d.status = 'queued'
              AND \(unescaped: DeliveryLedger.notOfApps("d", apps))
            HAVING count(*) > 0
            """, logger: logger)
        for try await seconds in rows.decode(Double.self) { return .milliseconds(Int64(seconds * 1000)) }
        return nil
    }
}
