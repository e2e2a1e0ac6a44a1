import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A campaign that is due, with its segment.
public struct DueCampaign: Sendable {
    public var campaign: Campaign
    public var segmentName: String?
    public var segmentRule: JSONValue
}

/// A claimed delivery: who it goes to and what APNs id it carries.
public struct ClaimedDelivery: Sendable, Hashable {
    public var target: DeliveryTarget
    public var deviceID: Int64
}

/// What became of one delivery, to be written with others in one statement.
public struct DeliveryOutcome: Sendable, Hashable {
    public enum Status: String, Sendable {
        case sent, invalid, failed, skipped, queued
    }

    public var deliveryID: Int64
    public var deviceID: Int64
    public var status: Status
    public var error: String?
    public var attempts: Int
    /// For `invalid`: when APNs says the token stopped being valid.
    public var invalidSince: Date?

    public init(deliveryID: Int64, deviceID: Int64, status: Status, error: String? = nil,
                attempts: Int = 1, invalidSince: Date? = nil) {
        self.deliveryID = deliveryID
        self.deviceID = deviceID
        self.status = status
        self.error = error
        self.attempts = attempts
        self.invalidSince = invalidSince
    }
}

public struct SnapshotResult: Sendable, Hashable {
    public var inserted: Int
    public var queued: Int
    public var skipped: Int
    public var deferred: Int
}

public struct RunFigures: Sendable, Hashable {
    public var campaigns = 0
    public var targeted = 0
    public var sent = 0
    public var invalid = 0
    public var failed = 0
    public var retried = 0
    public var skipped = 0
    public var expired = 0

    public init() {}
}

/// The batch run's statements. Work is claimed through PostgreSQL
/// (`FOR UPDATE SKIP LOCKED`), never through process memory, so any number of
/// runs may overlap without sending a delivery twice.
public struct CampaignStore: Sendable {
    public let client: PostgresClient
    public let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    // MARK: Runs

    public func beginRun(host: String, pid: Int32, dryRun: Bool) async throws -> Int64 {
        let rows = try await client.query(
            "INSERT INTO runs (host, pid, dry_run) VALUES (\(host), \(pid), \(dryRun)) RETURNING id",
            logger: logger)
        for try await id in rows.decode(Int64.self) { return id }
        throw StoreError.database("could not record the run")
    }

    public func finishRun(_ id: Int64, figures f: RunFigures, error: String?) async throws {
        let status = error == nil ? "succeeded" : "failed"
        try await client.query("""
            UPDATE runs SET finished_at = now(), status = \(status), error = \(error),
                campaigns = \(f.campaigns), targeted = \(f.targeted), sent = \(f.sent), invalid = \(f.invalid),
                failed = \(f.failed), retried = \(f.retried), skipped = \(f.skipped), expired = \(f.expired)
            WHERE id = \(id)
            """, logger: logger)
    }

    /// The advisory lock that says "run N is alive"; held on one connection for the run's life.
    public static func liveness(_ run: Int64) -> (Int32, Int32) { (0x4852, Int32(truncatingIfNeeded: run)) }

    /// Deliveries left `in_flight` by runs that are gone (crashed, killed) go
    /// back to the queue, and those runs are marked failed.
    public func recoverAbandoned(currentRun: Int64) async throws -> Int {
        let (ns, _) = Self.liveness(0)
        let rows = try await client.query("""
            WITH dead AS (
                SELECT r.id FROM runs r
                WHERE r.status = 'running' AND r.id <> \(currentRun) AND NOT r.dry_run
                  AND NOT EXISTS (SELECT 1 FROM pg_locks l
                                  WHERE l.locktype = 'advisory' AND l.classid = \(ns)::oid
                                    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                                    AND l.objid = r.id::oid AND l.objsubid = 2 AND l.granted)
            ), mark AS (
                UPDATE runs SET status = 'failed', finished_at = now(),
                    error = coalesce(error, 'the run stopped before finishing; its in-flight deliveries were requeued')
                WHERE id IN (SELECT id FROM dead) RETURNING id
            ), requeued AS (
                UPDATE deliveries SET status = 'queued', claimed_by = NULL, updated_at = now()
                WHERE status = 'in_flight' AND (claimed_by IS NULL OR claimed_by IN (SELECT id FROM mark))
                RETURNING id
            )
            SELECT count(*)::bigint FROM requeued
            """, logger: logger)
        for try await n in rows.decode(Int64.self) { return Int(n) }
        return 0
    }

    // MARK: Campaigns

    /// Ends campaigns whose time is up: queued deliveries become `expired`.
    public func expireCampaigns() async throws -> Int {
        let rows = try await client.query("""
            WITH ended AS (
                UPDATE campaigns SET status = 'completed', completed_at = now()
                WHERE status IN ('scheduled', 'running', 'paused') AND expires_at <= now()
                RETURNING id
            ), exp AS (
                UPDATE deliveries SET status = 'expired', last_error = 'campaign expired before delivery', updated_at = now()
                WHERE campaign_id IN (SELECT id FROM ended) AND status = 'queued'
                RETURNING id
            )
            SELECT count(*)::bigint FROM exp
            """, logger: logger)
        for try await n in rows.decode(Int64.self) { return Int(n) }
        return 0
    }

    /// Ids of campaigns that are due now, oldest first.
    public func dueCampaignIDs() async throws -> [Int64] {
        let rows = try await client.query("""
            SELECT id FROM campaigns
            WHERE status IN ('scheduled', 'running') AND send_at <= now()
              AND (expires_at IS NULL OR expires_at > now())
            ORDER BY send_at, id
            """, logger: logger)
        var ids: [Int64] = []
        for try await id in rows.decode(Int64.self) { ids.append(id) }
        return ids
    }

    public func campaignStatus(_ id: Int64) async throws -> CampaignStatus? {
        let rows = try await client.query("SELECT status FROM campaigns WHERE id = \(id)", logger: logger)
        for try await s in rows.decode(String.self) { return CampaignStatus(rawValue: s) }
        return nil
    }

    /// Loads one campaign. A row that cannot be read throws a `StoreError`
    /// naming the bad column; the caller fails that campaign only.
    public func loadCampaign(_ id: Int64) async throws -> DueCampaign {
        let rows = try await client.query("""
            SELECT c.id, c.name, c.kind, c.status, c.content::text, c.default_locale, c.media_url, c.media_type,
                   c.category_id, c.custom::text, c.sensitive::text, c.send_at, c.expires_at, c.priority,
                   c.collapse_id, c.thread_id, c.interruption_level, c.relevance_score, c.sound,
                   c.quiet_hours, c.frequency_capped, s.name, coalesce(s.rule, '{}'::jsonb)::text
            FROM campaigns c LEFT JOIN segments s ON s.id = c.segment_id
            WHERE c.id = \(id)
            """, logger: logger)
        for try await row in rows {
            let r = row.makeRandomAccess()
            let kindText = try r[2].decode(String.self)
            guard let kind = CampaignKind(rawValue: kindText) else {
                throw StoreError.database("unknown kind \"\(kindText)\"")
            }
            let statusText = try r[3].decode(String.self)
            let content = try Self.decodeContent(try r[4].decode(String.self))
            let custom = try Self.decodeObject(try r[9].decode(String.self), column: "custom")
            let sensitive = try r[10].decode(String?.self).map { try Self.decodeObject($0, column: "sensitive") }
            let campaign = Campaign(
                id: try r[0].decode(Int64.self),
                name: try r[1].decode(String.self),
                kind: kind,
                status: CampaignStatus(rawValue: statusText) ?? .scheduled,
                content: content,
                defaultLocale: try r[5].decode(String.self),
                mediaURL: try r[6].decode(String?.self),
                mediaType: try r[7].decode(String?.self),
                categoryID: try r[8].decode(String?.self),
                custom: custom,
                sensitive: sensitive,
                sendAt: try r[11].decode(Date.self),
                expiresAt: try r[12].decode(Date?.self),
                priority: Int(try r[13].decode(Int32.self)),
                collapseID: try r[14].decode(String?.self),
                threadID: try r[15].decode(String?.self),
                interruptionLevel: try r[16].decode(String?.self),
                relevanceScore: try r[17].decode(Double?.self),
                sound: try r[18].decode(String?.self),
                quietHours: try r[19].decode(Bool.self),
                frequencyCapped: try r[20].decode(Bool.self))
            let rule = try JSONDecoder().decode(JSONValue.self, from: Data(try r[22].decode(String.self).utf8))
            return DueCampaign(campaign: campaign, segmentName: try r[21].decode(String?.self), segmentRule: rule)
        }
        throw StoreError.notFound("campaign \(id) does not exist")
    }

    static func decodeContent(_ text: String) throws(StoreError) -> [String: LocalizedText] {
        guard case .object(let locales)? = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            throw StoreError.database("content is not a JSON object")
        }
        var out: [String: LocalizedText] = [:]
        for (locale, entry) in locales {
            do {
                out[locale] = try LocalizedText(json: entry)
            } catch {
                throw StoreError.database("content for locale \"\(locale)\" \(error.message)")
            }
        }
        return out
    }

    static func decodeObject(_ text: String, column: String) throws(StoreError) -> [String: JSONValue] {
        guard case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            throw StoreError.database("\(column) is not a JSON object")
        }
        return o
    }

    /// Marks a campaign failed with a reason a marketer can act on.
    public func failCampaign(_ id: Int64, reason: String) async throws {
        try await client.query("""
            UPDATE campaigns SET status = 'failed', failure_reason = \(reason), completed_at = now()
            WHERE id = \(id) AND status IN ('scheduled', 'running')
            """, logger: logger)
    }

    /// Writes the campaign's audience into `deliveries` with one set-based
    /// statement. Idempotent: a device already in the ledger is left alone.
    /// Only a scheduled campaign is snapshotted; with `start` it moves to
    /// running in the same transaction, so a later run does not snapshot again.
    public func snapshot(_ due: DueCampaign, segment: CompiledSegment, start: Bool) async throws -> SnapshotResult {
        let c = due.campaign
        var binds = PostgresBindings(capacity: 4 + segment.binds.count)
        binds.append(c.id)
        binds.append(c.hasSensitiveFields)
        binds.append(c.frequencyCapped)
        binds.append(c.quietHours)
        for b in segment.binds {
            switch b {
            case .text(let s): binds.append(s)
            case .texts(let a): binds.append(a)
            case .int(let i): binds.append(i)
            case .double(let d): binds.append(d)
            case .bool(let v): binds.append(v)
            case .json(let j): binds.append(j)
            }
        }
        let sql = """
            WITH capped AS (
                SELECT d.user_id FROM deliveries d, settings st
                WHERE $3 AND d.status = 'sent' AND d.sent_at > now() - st.frequency_window
                GROUP BY d.user_id HAVING count(DISTINCT d.campaign_id) >= min(st.frequency_cap)
            ), ins AS (
                INSERT INTO deliveries (campaign_id, device_id, user_id, status, not_before, last_error)
                SELECT $1, dv.id, u.id,
                       CASE WHEN $2 AND dv.public_key IS NULL THEN 'skipped'
                            WHEN cp.user_id IS NOT NULL THEN 'skipped'
                            ELSE 'queued' END,
                       CASE WHEN $4 THEN herald_quiet_until(u.time_zone, now(), st.quiet_hours_start, st.quiet_hours_end)
                            ELSE now() END,
                       CASE WHEN $2 AND dv.public_key IS NULL THEN 'device has no registered key for the sealed fields'
                            WHEN cp.user_id IS NOT NULL THEN 'frequency cap reached' END
                FROM devices dv
                JOIN users u ON u.id = dv.user_id
                CROSS JOIN settings st
                LEFT JOIN capped cp ON cp.user_id = u.id
                WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
                  AND (\(segment.sql))
                ON CONFLICT (campaign_id, device_id) DO NOTHING
                RETURNING status, not_before
            )
            SELECT count(*)::bigint,
                   count(*) FILTER (WHERE status = 'queued')::bigint,
                   count(*) FILTER (WHERE status = 'skipped')::bigint,
                   count(*) FILTER (WHERE status = 'queued' AND not_before > now())::bigint
            FROM ins
            """
        let query = PostgresQuery(unsafeSQL: sql, binds: binds)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { conn in
            let statusRows = try await conn.query("SELECT status FROM campaigns WHERE id = \(c.id) FOR UPDATE", logger: logger)
            var status = ""
            for try await s in statusRows.decode(String.self) { status = s }
            if status != "scheduled" {
                return SnapshotResult(inserted: 0, queued: 0, skipped: 0, deferred: 0)
            }
            var result = SnapshotResult(inserted: 0, queued: 0, skipped: 0, deferred: 0)
            for try await (n, q, s, d) in try await conn.query(query, logger: logger).decode((Int64, Int64, Int64, Int64).self) {
                result = SnapshotResult(inserted: Int(n), queued: Int(q), skipped: Int(s), deferred: Int(d))
            }
            if start {
                try await conn.query(
                    "UPDATE campaigns SET status = 'running', started_at = coalesce(started_at, now()) WHERE id = \(c.id)",
                    logger: logger)
            }
            return result
        }
    }

    // MARK: Deliveries

    /// Queued deliveries after `afterID`, read only (the dry run).
    public func peekQueued(campaign: Int64, afterID: Int64, limit: Int) async throws -> [ClaimedDelivery] {
        let rows = try await client.query("""
            SELECT d.id, d.device_id, dv.token, dv.environment, coalesce(dv.locale, u.locale), dv.public_key, dv.key_id, d.apns_id
            FROM deliveries d JOIN devices dv ON dv.id = d.device_id JOIN users u ON u.id = d.user_id
            WHERE d.campaign_id = \(campaign) AND d.status = 'queued' AND d.id > \(afterID)
            ORDER BY d.id LIMIT \(limit)
            """, logger: logger)
        return try await Self.claimed(rows)
    }

    /// Claims up to `limit` deliverable rows for `run`: they become
    /// `in_flight` and no other run will take them. Rows whose device was
    /// invalidated or whose user opted out since the snapshot are skipped.
    public func claim(campaign: Int64, run: Int64, limit: Int) async throws -> [ClaimedDelivery] {
        let rows = try await client.query("""
            WITH picked AS (
                SELECT d.id FROM deliveries d
                WHERE d.campaign_id = \(campaign) AND d.status = 'queued' AND d.not_before <= now()
                ORDER BY d.id LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            ), upd AS (
                UPDATE deliveries d SET
                    status = CASE WHEN dv.invalidated_at IS NOT NULL OR u.opted_out_at IS NOT NULL
                                  THEN 'skipped' ELSE 'in_flight' END,
                    last_error = CASE WHEN dv.invalidated_at IS NOT NULL
                                      THEN 'device invalidated: ' || coalesce(dv.invalid_reason, 'unknown')
                                      WHEN u.opted_out_at IS NOT NULL THEN 'user opted out'
                                      ELSE d.last_error END,
                    claimed_by = \(run),
                    apns_id = coalesce(d.apns_id, gen_random_uuid()),
                    updated_at = now()
                FROM picked, devices dv, users u
                WHERE d.id = picked.id AND dv.id = d.device_id AND u.id = d.user_id
                RETURNING d.id, d.device_id, dv.token, dv.environment, coalesce(dv.locale, u.locale) AS locale, dv.public_key, dv.key_id, d.apns_id, d.status
            )
            SELECT id, device_id, token, environment, locale, public_key, key_id, apns_id
            FROM upd WHERE status = 'in_flight' ORDER BY id
            """, logger: logger)
        return try await Self.claimed(rows)
    }

    private static func claimed(_ rows: PostgresRowSequence) async throws -> [ClaimedDelivery] {
        var out: [ClaimedDelivery] = []
        for try await (id, deviceID, token, env, locale, key, kid, apnsID) in rows.decode(
            (Int64, Int64, String, String, String, String?, String?, UUID?).self) {
            out.append(ClaimedDelivery(
                target: DeliveryTarget(deliveryID: id, deviceToken: token, environment: env, locale: locale,
                                       publicKey: key, keyID: kid, apnsID: apnsID ?? UUID()),
                deviceID: deviceID))
        }
        return out
    }

    /// Writes a batch of outcomes with one statement, and invalidates the
    /// devices APNs said are gone with another.
    public func record(_ outcomes: [DeliveryOutcome]) async throws {
        guard !outcomes.isEmpty else { return }
        let ids = outcomes.map(\.deliveryID)
        let statuses = outcomes.map(\.status.rawValue)
        let errors = outcomes.map { $0.error ?? "" }
        let attempts = outcomes.map { Int32(clamping: $0.attempts) }
        try await client.query("""
            UPDATE deliveries AS d SET
                status = o.status,
                last_error = nullif(o.error, ''),
                attempts = d.attempts + o.attempts,
                sent_at = CASE WHEN o.status = 'sent' THEN now() ELSE d.sent_at END,
                claimed_by = CASE WHEN o.status = 'queued' THEN NULL ELSE d.claimed_by END,
                updated_at = now()
            FROM unnest(\(ids)::bigint[], \(statuses)::text[], \(errors)::text[], \(attempts)::int4[])
                 AS o(id, status, error, attempts)
            WHERE d.id = o.id
            """, logger: logger)
        let invalid = outcomes.filter { $0.status == .invalid }
        if !invalid.isEmpty {
            let devices = invalid.map(\.deviceID)
            let reasons = invalid.map { $0.error ?? "invalid" }
            let since = invalid.map { ($0.invalidSince ?? Date()).timeIntervalSince1970 }
            try await client.query("""
                UPDATE devices AS dv SET invalidated_at = to_timestamp(o.since), invalid_reason = o.reason
                FROM unnest(\(devices)::bigint[], \(reasons)::text[], \(since)::float8[]) AS o(id, reason, since)
                WHERE dv.id = o.id AND dv.invalidated_at IS NULL
                  AND (dv.registered_at IS NULL OR dv.registered_at <= to_timestamp(o.since))
                """, logger: logger)
        }
    }

    /// Marks the campaign completed when nothing of it is left to send.
    /// Returns true when it did.
    public func completeIfDone(_ campaign: Int64) async throws -> Bool {
        let rows = try await client.query("""
            UPDATE campaigns SET status = 'completed', completed_at = now()
            WHERE id = \(campaign) AND status = 'running'
              AND NOT EXISTS (SELECT 1 FROM deliveries
                              WHERE campaign_id = \(campaign) AND status IN ('queued', 'in_flight'))
            RETURNING id
            """, logger: logger)
        for try await _ in rows.decode(Int64.self) { return true }
        return false
    }

    /// A cancelled campaign's queued deliveries are cancelled too.
    public func cancelQueued(_ campaign: Int64) async throws {
        try await client.query("""
            UPDATE deliveries SET status = 'cancelled', last_error = 'campaign cancelled', updated_at = now()
            WHERE campaign_id = \(campaign) AND status = 'queued'
            """, logger: logger)
    }
}

extension CampaignStore {
    /// Runs `body` while holding run `run`'s liveness lock on a connection of
    /// its own, so that other runs can tell this one is alive (see
    /// `recoverAbandoned`). The lock goes with the connection if the process dies.
    public func whileAlive<T: Sendable>(run: Int64, _ body: () async throws -> T) async throws -> T {
        let (ns, key) = Self.liveness(run)
        let logger = self.logger
        return try await client.withConnection { conn in
            try await conn.query("SELECT pg_advisory_lock(\(ns), \(key))", logger: logger)
            do {
                let result = try await body()
                _ = try? await conn.query("SELECT pg_advisory_unlock(\(ns), \(key))", logger: logger)
                return result
            } catch {
                _ = try? await conn.query("SELECT pg_advisory_unlock(\(ns), \(key))", logger: logger)
                throw error
            }
        }
    }
}
