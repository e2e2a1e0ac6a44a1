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
    /// Attempts recorded before this claim (the retry backoff grows with them).
    public var attempts: Int = 0
}

/// What a claim found: the rows claimed, where the next claim reads on, the
/// campaign's status when none was claimed, and whether the run is still live.
public struct ClaimAnswer: Sendable, Hashable {
    public var deliveries: [ClaimedDelivery]
    /// The last row the claim read: the next one reads on from there.
    public var end: Int64
    /// The campaign's status, read when nothing was claimed (a pause or cancel shows here).
    public var status: CampaignStatus?
    /// Another run declared this one gone: it must stop.
    public var runGone: Bool
}

/// What one claim read and took: the rows claimed, the last row of the
/// window it read (where the next claim reads on) and whether the window
/// was full (more rows may follow).
public struct ClaimWindow: Sendable, Hashable {
    public var deliveries: [ClaimedDelivery]
    public var end: Int64
    public var full: Bool
    /// False when the run is no longer `running`: another run declared it
    /// gone (its process seemed to have ended, or it stopped renewing). It
    /// claims nothing more and must stop: its deliveries are another's now.
    public var runLive: Bool

    public init(deliveries: [ClaimedDelivery], end: Int64, full: Bool, runLive: Bool = true) {
        self.deliveries = deliveries
        self.end = end
        self.full = full
        self.runLive = runLive
    }
}

/// What became of one delivery, to be written with others in one statement.
public struct DeliveryOutcome: Sendable, Hashable {
    public enum Status: String, Sendable {
        case sent, invalid, failed, skipped
        /// Given back unsent: queued again as it was (after `delay`).
        case queued
        /// A transient answer (429, 5xx, a lost connection, a timeout):
        /// queued again after `delay`, the run's backoff.
        case retry
    }

    public var deliveryID: Int64
    public var deviceID: Int64
    public var status: Status
    public var error: String?
    public var attempts: Int
    /// For `invalid`: when APNs says the token stopped being valid.
    public var invalidSince: Date?
    /// For `queued` and `retry`: the least wait before it is claimed again, in seconds.
    public var delay: Double

    public init(deliveryID: Int64, deviceID: Int64, status: Status, error: String? = nil,
                attempts: Int = 1, invalidSince: Date? = nil, delay: Double = 0) {
        self.deliveryID = deliveryID
        self.deviceID = deviceID
        self.status = status
        self.error = error
        self.attempts = attempts
        self.invalidSince = invalidSince
        self.delay = delay
    }
}

public struct SnapshotResult: Sendable, Hashable {
    public var inserted: Int
    public var queued: Int
    public var skipped: Int
    public var deferred: Int
    /// Of `skipped`: devices without a key for the campaign's sealed fields.
    public var skippedNoKey: Int = 0
    /// Of `skipped`: users at their frequency cap.
    public var skippedCapped: Int = 0
    /// Per variant (name order), when the campaign has variants: the
    /// devices assigned to it and how many of them are queued.
    public var variants: [VariantCount] = []
    /// False while slices of the audience remain to be written (Sql/0014).
    public var complete = true

    public init(inserted: Int = 0, queued: Int = 0, skipped: Int = 0, deferred: Int = 0,
                skippedNoKey: Int = 0, skippedCapped: Int = 0, complete: Bool = true) {
        self.inserted = inserted
        self.queued = queued
        self.skipped = skipped
        self.deferred = deferred
        self.skippedNoKey = skippedNoKey
        self.skippedCapped = skippedCapped
        self.complete = complete
    }

    /// Adds a later slice's counts.
    public mutating func add(_ slice: SnapshotResult) {
        inserted += slice.inserted
        queued += slice.queued
        skipped += slice.skipped
        deferred += slice.deferred
        skippedNoKey += slice.skippedNoKey
        skippedCapped += slice.skippedCapped
        for count in slice.variants {
            if let i = variants.firstIndex(where: { $0.name == count.name }) {
                variants[i].devices += count.devices
                variants[i].queued += count.queued
            } else {
                variants.append(count)
                variants.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            }
        }
        complete = slice.complete
    }

    public struct VariantCount: Sendable, Hashable {
        public var name: String
        public var devices: Int
        public var queued: Int

        public init(name: String, devices: Int, queued: Int) {
            self.name = name
            self.devices = devices
            self.queued = queued
        }
    }
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
    /// Deliveries given back to the queue: transient answers, unsent claims.
    public var requeued = 0

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

    public func beginRun(host: String, pid: Int32, dryRun: Bool, lease: Duration = .seconds(300)) async throws -> Int64 {
        let seconds = Double(lease.components.seconds)
        let rows = try await client.query("""
            INSERT INTO runs (host, pid, dry_run, heartbeat_at, lease_expires_at)
            VALUES (\(host), \(pid), \(dryRun), now(), now() + make_interval(secs => \(seconds))) RETURNING id
            """, logger: logger)
        for try await id in rows.decode(Int64.self) { return id }
        throw StoreError.database("could not record the run")
    }

    /// How a run ended, in `runs.status`.
    public enum RunEnd: String, Sendable {
        /// Everything due was done.
        case succeeded
        /// Stopped early (an outage, a stop signal); the next run continues.
        case stopped
        /// Stopped by an error a person must look at.
        case failed
    }

    /// Writes the run's figures and gives back whatever it still holds in
    /// flight (nothing, normally): queued again, or cancelled when its
    /// campaign was cancelled. A run another run declared gone (its leases
    /// expired) keeps that verdict. Returns how many deliveries were given back.
    @discardableResult
    public func finishRun(_ id: Int64, figures f: RunFigures, end: RunEnd, error: String?) async throws -> Int {
        let held = try await claimedPartitions(of: [id])
        let rows = try await client.query("""
            WITH back AS (
                UPDATE deliveries d SET
                    status = CASE WHEN (SELECT c.status FROM campaigns c WHERE c.id = d.campaign_id) = 'cancelled' THEN 'cancelled' ELSE 'queued' END,
                    last_error = CASE WHEN (SELECT c.status FROM campaigns c WHERE c.id = d.campaign_id) = 'cancelled' THEN 'campaign cancelled' ELSE d.last_error END,
                    claimed_by = NULL, lease_expires_at = NULL, updated_at = now()
                WHERE (d.campaign_id = ANY(\(held.campaigns)::bigint[]) OR (\(held.refreshes) AND d.campaign_id IS NULL))
                  AND d.claimed_by = \(id) AND d.status = 'in_flight'
                RETURNING d.id
            ), run AS (
                UPDATE runs SET finished_at = now(), status = \(end.rawValue), error = \(error),
                    campaigns = \(f.campaigns), targeted = \(f.targeted), sent = \(f.sent), invalid = \(f.invalid),
                    failed = \(f.failed), retried = \(f.retried), skipped = \(f.skipped), expired = \(f.expired),
                    requeued = \(f.requeued) + (SELECT count(*) FROM back)
                WHERE id = \(id) AND status = 'running'
                RETURNING id
            )
            SELECT (SELECT count(*) FROM back)::bigint, (SELECT count(*) FROM run)::bigint
            """, logger: logger)
        for try await (back, _) in rows.decode((Int64, Int64).self) { return Int(back) }
        return 0
    }

    /// The ledger partitions where `runs` may hold deliveries in flight:
    /// the campaigns their claims recorded (`runs.claimed_campaigns`) and
    /// the config refresh pushes' rows (`claimed_refreshes`). Statements
    /// that look for a run's in-flight rows name these, as binds that
    /// PostgreSQL prunes the other partitions with when it plans the
    /// statement (Sql/0012: no index names `claimed_by`, so that a claim is
    /// a HOT update).
    struct ClaimedPartitions {
        var campaigns: [Int64] = []
        var refreshes = false
    }

    func claimedPartitions(of runs: [Int64], orLapsedAfter lease: Duration? = nil, besides current: Int64 = 0) async throws -> ClaimedPartitions {
        let seconds = lease.map { Double($0.components.seconds) } ?? -1
        let rows = try await client.query("""
            SELECT coalesce(array_agg(DISTINCT c.id) FILTER (WHERE c.id IS NOT NULL), '{}'), coalesce(bool_or(r.claimed_refreshes), false)
            FROM runs r LEFT JOIN LATERAL unnest(r.claimed_campaigns) AS c(id) ON true
            WHERE r.id = ANY(\(runs)::bigint[])
               OR (\(seconds) >= 0 AND r.status = 'running' AND r.id <> \(current) AND NOT r.dry_run
                   AND coalesce(r.heartbeat_at, r.started_at) < now() - make_interval(secs => \(seconds)))
            """, logger: logger)
        var held = ClaimedPartitions()
        for try await (campaigns, refreshes) in rows.decode(([Int64], Bool).self) {
            held = ClaimedPartitions(campaigns: campaigns, refreshes: refreshes)
        }
        return held
    }

    /// Renews the lease of every delivery `run` holds — one row, the run's
    /// (`runs.lease_expires_at`) — and its heartbeat. False when the run is
    /// no longer running (another run declared it gone).
    @discardableResult
    public func renewLeases(run: Int64, lease: Duration) async throws -> Bool {
        let seconds = Double(lease.components.seconds)
        let rows = try await client.query("""
            UPDATE runs SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => \(seconds))
            WHERE id = \(run) AND status = 'running' RETURNING 1
            """, logger: logger)
        for try await _ in rows.decode(Int32.self) { return true }
        return false
    }

    /// Runs still marked running, for the liveness check of `recoverAbandoned`.
    public func otherLiveRuns(than run: Int64) async throws -> [(id: Int64, host: String, pid: Int32)] {
        let rows = try await client.query("""
            SELECT id, host, pid FROM runs WHERE status = 'running' AND id <> \(run) AND NOT dry_run
            """, logger: logger)
        var out: [(id: Int64, host: String, pid: Int32)] = []
        for try await (id, host, pid) in rows.decode((Int64, String, Int32).self) { out.append((id, host, pid)) }
        return out
    }

    /// Runs that stopped renewing for a whole lease (crashed, hung, cut off
    /// from the database), and `deadRuns` (runs known to be gone: their
    /// process no longer exists), are marked failed, and the deliveries they
    /// held go back to the queue. (A claim also takes over the deliveries of
    /// a run whose lease lapsed, without waiting for this.)
    public func recoverAbandoned(currentRun: Int64, deadRuns: [Int64], lease: Duration) async throws -> Int {
        let seconds = Double(lease.components.seconds)
        let held = try await claimedPartitions(of: deadRuns, orLapsedAfter: lease, besides: currentRun)
        let rows = try await client.query("""
            WITH mark AS (
                UPDATE runs SET status = 'failed', finished_at = now(),
                    error = coalesce(error, 'the run stopped before finishing; its in-flight deliveries were requeued')
                WHERE status = 'running' AND id <> \(currentRun) AND NOT dry_run
                  AND (id = ANY(\(deadRuns)::bigint[])
                       OR coalesce(heartbeat_at, started_at) < now() - make_interval(secs => \(seconds)))
                RETURNING id
            ), requeued AS (
                UPDATE deliveries d SET
                    status = CASE WHEN (SELECT c.status FROM campaigns c WHERE c.id = d.campaign_id) = 'cancelled' THEN 'cancelled' ELSE 'queued' END,
                    last_error = CASE WHEN (SELECT c.status FROM campaigns c WHERE c.id = d.campaign_id) = 'cancelled' THEN 'campaign cancelled' ELSE d.last_error END,
                    claimed_by = NULL, lease_expires_at = NULL, updated_at = now()
                WHERE (d.campaign_id = ANY(\(held.campaigns)::bigint[]) OR (\(held.refreshes) AND d.campaign_id IS NULL))
                  AND d.claimed_by IN (SELECT id FROM mark UNION SELECT unnest(\(deadRuns)::bigint[]))
                  AND d.status = 'in_flight'
                RETURNING d.id
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
        var loaded: DueCampaign?
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
            loaded = DueCampaign(campaign: campaign, segmentName: try r[21].decode(String?.self), segmentRule: rule)
        }
        guard var due = loaded else { throw StoreError.notFound("campaign \(id) does not exist") }
        due.campaign.variants = try await loadVariants(id)
        return due
    }

    /// A campaign's A/B variants in name order (byte order, as the analyst
    /// views order them); a row that cannot be read throws naming the variant.
    func loadVariants(_ id: Int64) async throws -> [CampaignVariant] {
        let rows = try await client.query("""
            SELECT name, share, content::text, media_url, media_type FROM campaign_variants
            WHERE campaign_id = \(id) ORDER BY name COLLATE "C"
            """, logger: logger)
        var variants: [CampaignVariant] = []
        for try await (name, share, content, url, type) in rows.decode((String, Int32, String, String?, String?).self) {
            let text: [String: LocalizedText]
            do {
                text = try Self.decodeContent(content)
            } catch {
                throw StoreError.database("variant \"\(name)\": \(error.message)")
            }
            variants.append(CampaignVariant(name: name, share: Int(share), content: text, mediaURL: url, mediaType: type))
        }
        return variants
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
            WHERE id = \(id) AND status IN ('scheduled', 'running', 'paused')
            """, logger: logger)
    }

    /// Writes the campaign's audience into `deliveries`, set-based. A
    /// campaign is snapshotted once, whether it is due as `scheduled` or was
    /// resumed as `running`; a device already in its ledger is left alone.
    ///
    /// With `start` (a run) the audience is written in slices of device ids
    /// (Sql/0014), each in a transaction of its own, and this writes the
    /// next slice only: the first moves the campaign to `running` and sets
    /// `snapshot_at` (the variants are frozen from then on), each records
    /// how far it got (`snapshot_through`), the last clears it. The result
    /// says whether the snapshot is complete; the run sends the slices
    /// written while it writes the next (`firstSlice` device ids first, then
    /// each slice three times as large as all before it). Without `start`
    /// (a dry run) the whole audience is written in one statement, and the
    /// campaign stays as it was.
    public func snapshot(_ due: DueCampaign, start: Bool, firstSlice: Int64 = defaultFirstSlice) async throws -> SnapshotResult {
        let c = due.campaign
        let logger = self.logger
        // Its partition first, in a transaction of its own (only for a
        // campaign still to snapshot: one resumed after a prune has none).
        for try await pending in try await client.query("""
            SELECT (snapshot_at IS NULL OR snapshot_through IS NOT NULL) AND status IN ('scheduled', 'running')
            FROM campaigns WHERE id = \(c.id)
            """, logger: logger).decode(Bool.self) where pending {
            if try await !ensurePartition(campaign: c.id) {
                logger.warning("the campaign's ledger partition could not be made now (a lock was busy); its deliveries go to deliveries_default",
                               metadata: ["campaign": "\(c.id)"])
            }
        }
        let result = try await client.withTransaction(logger: logger) { conn -> (snapshot: SnapshotResult, analyze: Bool) in
            let statusRows = try await conn.query("""
                SELECT status, snapshot_at IS NULL, snapshot_through, (SELECT max(id) FROM devices)
                FROM campaigns WHERE id = \(c.id) FOR UPDATE
                """, logger: logger)
            var status = ""
            var fresh = false
            var through: Int64?
            var lastDevice: Int64 = 0
            for try await (s, f, t, m) in statusRows.decode((String, Bool, Int64?, Int64?).self) {
                (status, fresh, through, lastDevice) = (s, f, t, m ?? 0)
            }
            guard fresh || through != nil, status == "scheduled" || status == "running" else { return (SnapshotResult(), false) }
            // This slice: the device ids after the cursor, `sliceGrowth`
            // times as many as all before it (at least `firstSlice`); a dry
            // run writes them all.
            let low = through ?? 0
            let grown = low.multipliedReportingOverflow(by: Self.sliceGrowth)
            let step = max(firstSlice, grown.overflow ? .max : grown.partialValue, 1)
            let high = start && low <= Int64.max - step ? low + step : Int64.max
            let last = high >= lastDevice
            // Rows of these devices already in the ledger (a dry run's, or
            // written by hand) make the statement skip them; else it is a
            // plain INSERT.
            var written = false
            for try await exists in try await conn.query("""
                SELECT EXISTS (SELECT 1 FROM deliveries WHERE campaign_id = \(c.id) AND kind = 'campaign'
                                                       AND device_id > \(low) AND device_id <= \(high))
                """, logger: logger).decode(Bool.self) { written = exists }
            let query = try Self.snapshotQuery(due, devices: low...high, skippingWritten: written)
            var done = try await Self.insertAudience(query, on: conn, logger: logger)
            done.complete = last
            if start {
                try await conn.query("""
                    UPDATE campaigns SET status = 'running', started_at = coalesce(started_at, now()),
                        snapshot_at = coalesce(snapshot_at, now()),
                        snapshot_through = \(last ? nil : high as Int64?)
                    WHERE id = \(c.id)
                    """, logger: logger)
            }
            // The claims are planned with statistics that know the campaign
            // (PostgreSQL scales them to the partition's size as it grows):
            // after a first slice that more will follow or that is large,
            // and after a large last one.
            let large = done.inserted >= Self.analyzeAfter
            return (done, low == 0 ? large || (!last && done.inserted > 0) : last && large)
        }
        if result.analyze {
            try await client.query("SELECT herald_ledger_analyze(\(c.id))", logger: logger)
        }
        return result.snapshot
    }

    /// Each next slice of a snapshot spans this many times the device ids
    /// of all slices before it: 50,000, 200,000, 800,000 and 3,200,000 ids
    /// (four statements for a million devices). Every slice reads its range
    /// of devices and joins the users (a hash of them all, for a large
    /// slice), so fewer slices cost less; measured on 1,000,000 devices,
    /// doubling slices (six statements) took 7.8 s against 5.4 s for one.
    static let sliceGrowth: Int64 = 3

    /// The device ids of a run's first snapshot slice: about a second of
    /// PostgreSQL's work here, after which sending starts.
    public static let defaultFirstSlice: Int64 = 50_000

    /// A snapshot of at least this many rows is followed by ANALYZE of the
    /// campaign's ledger rows: the statistics the claims are planned with
    /// must know the campaign (measured: a first claim planned on statistics
    /// that did not took 33 s for 1,000 rows of a 200,000-row campaign).
    static let analyzeAfter = 10_000

    /// Gives the campaign a partition of the ledger of its own, when it has
    /// none yet (Sql/0010, `herald_delivery_partition`), in a transaction of
    /// its own: the partition is made with locks a run must not hold while
    /// it writes. Returns false when the locks were busy and the campaign's
    /// rows go to the DEFAULT partition instead (correct, slower to prune).
    /// Throws for a campaign whose ledger was pruned.
    @discardableResult
    public func ensurePartition(campaign: Int64) async throws -> Bool {
        let rows = try await client.query("SELECT herald_delivery_partition(\(campaign))", logger: logger)
        for try await made in rows.decode(Bool.self) { return made }
        return false
    }

    /// What `snapshot` would write for the campaign now, whatever its status
    /// (a draft, a future campaign): the run's own statement, run in a
    /// transaction that is always rolled back. Nothing is written (a
    /// sequence may advance). Devices already in the campaign's ledger are
    /// not counted again, as in a run.
    public func previewSnapshot(_ due: DueCampaign) async throws -> SnapshotResult {
        let query = try Self.snapshotQuery(due)
        let logger = self.logger
        return try await client.withConnection { conn in
            try await conn.query("BEGIN", logger: logger)
            do {
                let result = try await Self.insertAudience(query, on: conn, logger: logger)
                try await conn.query("ROLLBACK", logger: logger)
                return result
            } catch {
                _ = try? await conn.query("ROLLBACK", logger: logger)
                throw error
            }
        }
    }

    private static func insertAudience(_ query: PostgresQuery, on conn: PostgresConnection, logger: Logger) async throws -> SnapshotResult {
        var result = SnapshotResult()
        for try await (n, q, s, d, k, f, names, devices, queued) in try await conn.query(query, logger: logger)
            .decode((Int64, Int64, Int64, Int64, Int64, Int64, [String], [Int64], [Int64]).self) {
            result = SnapshotResult(inserted: Int(n), queued: Int(q), skipped: Int(s), deferred: Int(d),
                                    skippedNoKey: Int(k), skippedCapped: Int(f))
            result.variants = zip(names, zip(devices, queued)).map {
                SnapshotResult.VariantCount(name: $0.0, devices: Int($0.1.0), queued: Int($0.1.1))
            }
        }
        return result
    }

    /// The statement that writes a campaign's audience into the ledger.
    /// `skippingWritten` leaves out the devices the campaign's ledger has
    /// already (`ON CONFLICT DO NOTHING`); without it the statement is a
    /// plain INSERT, for a campaign that has none, which PostgreSQL writes
    /// without a speculative insertion per row (measured, 200,000 rows:
    /// 1.25 s and 1.21M WAL records with the conflict clause, 0.98 s and
    /// 1.01M without).
    /// `devices` bounds the device ids written (a slice: above its lower
    /// bound, up to its upper one).
    static func snapshotQuery(_ due: DueCampaign, devices: ClosedRange<Int64> = 0...Int64.max,
                              skippingWritten: Bool = true) throws -> PostgresQuery {
        let c = due.campaign
        var binds = PostgresBindings(capacity: 16)
        binds.append(c.id)
        binds.append(c.hasSensitiveFields)
        binds.append(c.frequencyCapped)
        binds.append(c.quietHours)
        // The variants in name order and where each one's buckets begin
        // (empty: the campaign has none, deliveries carry no variant).
        binds.append(c.variants.map(\.name))
        binds.append(c.variantLowerBounds.map { Int32($0) })
        binds.append(devices.lowerBound)
        binds.append(devices.upperBound)
        // The segment's condition is compiled for this statement: its binds
        // follow the eight above, and it names devices `dv` and users `u`.
        let segment: CompiledSegment
        do {
            segment = try SegmentCompiler(firstPlaceholder: binds.count + 1, deviceAlias: "dv", userAlias: "u")
                .compile(due.segmentRule)
        } catch {
            throw CampaignProblem("\(due.segmentName.map { "segment \"\($0)\"" } ?? "segment"): \(error.description)")
        }
        binds.append(segment: segment)
        let sql = """
            WITH capped AS (
                SELECT d.user_id FROM deliveries d, settings st
                WHERE $3 AND d.kind = 'campaign' AND d.status = 'sent' AND d.sent_at > now() - st.frequency_window
                  -- The campaigns that may have sent within the window (not
                  -- those that ended before it): the ledger partitions to read.
                  AND d.campaign_id = ANY (ARRAY(SELECT rc.id FROM campaigns rc, settings rs
                                                 WHERE coalesce(rc.completed_at, now()) > now() - rs.frequency_window))
                GROUP BY d.user_id HAVING count(DISTINCT d.campaign_id) >= min(st.frequency_cap)
            ), ins AS (
                INSERT INTO deliveries (campaign_id, device_id, user_id, status, not_before, last_error, variant)
                SELECT $1, dv.id, u.id,
                       CASE WHEN $2 AND dv.public_key IS NULL THEN 'skipped'
                            WHEN cp.user_id IS NOT NULL THEN 'skipped'
                            ELSE 'queued' END,
                       CASE WHEN $4 THEN herald_quiet_until(u.time_zone, now(), st.quiet_hours_start, st.quiet_hours_end)
                            ELSE now() END,
                       CASE WHEN $2 AND dv.public_key IS NULL THEN 'device has no registered key for the sealed fields'
                            WHEN cp.user_id IS NOT NULL THEN 'frequency cap reached' END,
                       CASE WHEN cardinality($5::text[]) > 0
                            THEN ($5::text[])[width_bucket(herald_variant_bucket($1, dv.id), $6::int4[])] END
                FROM devices dv
                JOIN users u ON u.id = dv.user_id
                CROSS JOIN settings st
                LEFT JOIN capped cp ON cp.user_id = u.id
                WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
                  AND dv.id > $7 AND dv.id <= $8
                  AND (\(segment.sql))
                \(skippingWritten ? "ON CONFLICT (campaign_id, device_id) WHERE kind = 'campaign' DO NOTHING" : "")
                RETURNING id, status, not_before, last_error = 'frequency cap reached' AS capped, variant
            ), by_variant AS (
                SELECT variant, count(*) AS devices, count(*) FILTER (WHERE status = 'queued') AS queued
                FROM ins WHERE variant IS NOT NULL GROUP BY variant
            ), ids AS (
                -- For the reply intake's lookup by delivery id (Sql/0010).
                INSERT INTO delivery_id_ranges (campaign_id, ids)
                SELECT $1, int8range(min(id), max(id), '[]') FROM ins HAVING count(*) > 0
            )
            SELECT count(*)::bigint,
                   count(*) FILTER (WHERE status = 'queued')::bigint,
                   count(*) FILTER (WHERE status = 'skipped')::bigint,
                   count(*) FILTER (WHERE status = 'queued' AND not_before > now())::bigint,
                   count(*) FILTER (WHERE status = 'skipped' AND NOT capped)::bigint,
                   count(*) FILTER (WHERE status = 'skipped' AND capped)::bigint,
                   coalesce((SELECT array_agg(variant ORDER BY variant COLLATE "C") FROM by_variant), '{}')::text[],
                   coalesce((SELECT array_agg(devices ORDER BY variant COLLATE "C") FROM by_variant), '{}')::int8[],
                   coalesce((SELECT array_agg(queued ORDER BY variant COLLATE "C") FROM by_variant), '{}')::int8[]
            FROM ins
            """
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    // MARK: Deliveries

    /// Queued deliveries after `afterID`, read only (the dry run).
    public func peekQueued(campaign: Int64, afterID: Int64, limit: Int) async throws -> [ClaimedDelivery] {
        let rows = try await client.query("""
            SELECT d.id, d.device_id, dv.token, dv.environment, coalesce(dv.locale, u.locale), dv.public_key, dv.key_id, d.apns_id, d.variant
            FROM deliveries d JOIN devices dv ON dv.id = d.device_id JOIN users u ON u.id = d.user_id
            WHERE d.campaign_id = \(campaign) AND d.status = 'queued' AND d.id > \(afterID)
            ORDER BY d.id LIMIT \(limit)
            """, logger: logger)
        return try await Self.claimed(rows)
    }

    /// Claims deliverable rows for `run` among the next `limit` rows of the
    /// campaign after `after` (in ledger order, whatever their status: a
    /// window the planner reads in index order, whatever the statistics say
    /// of statuses). They become `in_flight`, owned by `run` while its lease
    /// (`runs.lease_expires_at`, renewed by the run and by each of its
    /// claims) holds, and no other run takes them before. Queued rows whose
    /// `not_before` has come, and in-flight rows of a run that is no longer
    /// running or whose lease lapsed, are claimable. Rows whose device was
    /// invalidated or deleted, or whose user opted out, since the snapshot
    /// are skipped. Nothing is claimed unless the campaign is running (a
    /// pause or cancel wins).
    ///
    /// A run passes the end of its previous window as `after`, so each claim
    /// reads only rows it has not passed yet; rows given back behind it are
    /// found with `firstClaimable`.
    public func claimWindow(campaign: Int64, run: Int64, limit: Int, lease: Duration,
                            after: Int64) async throws -> ClaimWindow {
        let seconds = Double(lease.components.seconds)
        let rows = try await client.query("""
            WITH live AS (
                UPDATE runs SET lease_expires_at = greatest(lease_expires_at, now() + make_interval(secs => \(seconds))),
                    claimed_campaigns = CASE WHEN \(campaign) = ANY (claimed_campaigns) THEN claimed_campaigns
                                             ELSE claimed_campaigns || \(campaign)::bigint END
                WHERE id = \(run) AND status = 'running'
                  AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = \(campaign) AND c.status IN ('scheduled', 'running'))
                RETURNING id
            ), win AS MATERIALIZED (
                SELECT d.id, d.status, d.not_before, d.claimed_by FROM deliveries d
                WHERE d.campaign_id = \(campaign) AND d.kind = 'campaign' AND d.id > \(after)
                ORDER BY d.id LIMIT \(limit)
            ), picked AS (
                -- The window's claimable ids as an array: the ledger is read
                -- by id (partitions have no unique index on id, and a join
                -- with the window was planned as millions of rows).
                SELECT d.id, d.device_id, d.user_id FROM deliveries d
                WHERE d.campaign_id = \(campaign)
                  AND d.id = ANY (ARRAY(SELECT w.id FROM win w WHERE \(unescaped: Self.claimable("w"))))
                  -- Checked again on the row as it is once locked.
                  AND \(unescaped: Self.claimable("d"))
                  AND EXISTS (SELECT 1 FROM live)
                FOR UPDATE OF d SKIP LOCKED
            ), upd AS (
                UPDATE deliveries d SET
                    status = CASE WHEN dv.id IS NULL OR u.id IS NULL OR dv.invalidated_at IS NOT NULL
                                       OR u.opted_out_at IS NOT NULL OR dv.user_id <> d.user_id
                                  THEN 'skipped' ELSE 'in_flight' END,
                    last_error = CASE WHEN dv.id IS NULL OR u.id IS NULL THEN 'device deleted'
                                      WHEN dv.invalidated_at IS NOT NULL
                                      THEN 'device invalidated: ' || coalesce(dv.invalid_reason, 'unknown')
                                      WHEN u.opted_out_at IS NOT NULL THEN 'user opted out'
                                      -- The token was registered by another user since the snapshot.
                                      WHEN dv.user_id <> d.user_id THEN 'device moved to another user'
                                      ELSE d.last_error END,
                    claimed_by = \(run),
                    lease_expires_at = now() + make_interval(secs => \(seconds)),
                    apns_id = coalesce(d.apns_id, gen_random_uuid()),
                    updated_at = now()
                FROM picked LEFT JOIN devices dv ON dv.id = picked.device_id LEFT JOIN users u ON u.id = picked.user_id
                WHERE d.id = picked.id AND d.campaign_id = \(campaign)
                RETURNING d.id, d.device_id, dv.token, dv.environment, coalesce(dv.locale, u.locale) AS locale, dv.public_key, dv.key_id, d.apns_id, d.status, d.variant, d.attempts
            )
            SELECT m.last, m.n, m.run_live, c.id, c.device_id, c.token, c.environment, c.locale, c.public_key, c.key_id, c.apns_id, c.variant, c.attempts
            FROM (SELECT max(id) AS last, count(*)::bigint AS n,
                         EXISTS (SELECT 1 FROM runs WHERE id = \(run) AND status = 'running') AS run_live FROM win) m
            LEFT JOIN (SELECT * FROM upd WHERE status = 'in_flight') c ON true
            ORDER BY c.id
            """, logger: logger)
        var window = ClaimWindow(deliveries: [], end: after, full: false)
        for try await (last, n, runLive, id, deviceID, token, env, locale, key, kid, apnsID, variant, attempts) in rows.decode(
            (Int64?, Int64, Bool, Int64?, Int64?, String?, String?, String?, String?, String?, UUID?, String?, Int32?).self) {
            window.end = last ?? after
            window.full = n >= limit
            window.runLive = runLive
            guard let id, let deviceID, let token, let env, let locale else { continue }
            window.deliveries.append(ClaimedDelivery(
                target: DeliveryTarget(deliveryID: id, deviceToken: token, environment: env, locale: locale,
                                       publicKey: key, keyID: kid, apnsID: apnsID ?? UUID(), variant: variant),
                deviceID: deviceID, attempts: Int(attempts ?? 0)))
        }
        return window
    }

    /// When the ledger row `alias` may be claimed (by campaign claims and
    /// config refresh claims alike): queued and due, or in flight for a run
    /// that is no longer running or whose lease lapsed.
    static func claimable(_ alias: String) -> String {
        """
        ((\(alias).status = 'queued' AND \(alias).not_before <= now())
         OR (\(alias).status = 'in_flight' AND NOT EXISTS (
                 SELECT 1 FROM runs r WHERE r.id = \(alias).claimed_by AND r.status = 'running'
                                        AND r.lease_expires_at >= now())))
        """
    }

    /// The first claimable row of the campaign after `after` (queued and
    /// due, or held by a run that is gone), one read of the campaign's rows;
    /// nil when there is none.
    public func firstClaimable(campaign: Int64, after: Int64 = 0) async throws -> Int64? {
        let rows = try await client.query("""
            SELECT min(d.id) FROM deliveries d
            WHERE d.campaign_id = \(campaign) AND d.kind = 'campaign' AND d.id > \(after)
              AND \(unescaped: Self.claimable("d"))
            """, logger: logger)
        for try await id in rows.decode(Int64?.self) { return id }
        return nil
    }

    /// Claims the campaign's next claimable rows for `run` (at most `limit`),
    /// reading on after `after`, the end of the previous claim (0: from the
    /// campaign's first claimable row): windows of rows sent already
    /// (another worker's) are read past, and rows given back behind the
    /// cursor (a retry, a stopped run's) are found again. The one claim walk
    /// of a run's sending session.
    public func claimNext(campaign: Int64, run: Int64, limit: Int, lease: Duration, after: Int64) async throws -> ClaimAnswer {
        func take(_ from: Int64) async throws -> ClaimWindow {
            try await claimWindow(campaign: campaign, run: run, limit: limit, lease: lease, after: from)
        }
        var window = ClaimWindow(deliveries: [], end: after, full: false)
        func goOn() -> Bool { window.deliveries.isEmpty && window.full && window.runLive }
        if after > 0 {
            window = try await take(after)
        } else if let start = try await firstClaimable(campaign: campaign) {
            window = try await take(start - 1)
        }
        while goOn() { window = try await take(window.end) }
        if window.deliveries.isEmpty, window.runLive, after > 0, let behind = try await firstClaimable(campaign: campaign) {
            window = try await take(behind - 1)
            while goOn() { window = try await take(window.end) }
        }
        if !window.runLive { return ClaimAnswer(deliveries: [], end: window.end, status: nil, runGone: true) }
        // Nothing claimable: a marketer's pause or cancel, or the end.
        let status = window.deliveries.isEmpty ? try await campaignStatus(campaign) : nil
        return ClaimAnswer(deliveries: window.deliveries, end: window.end, status: status, runGone: false)
    }

    /// Claims up to `limit` of the campaign's claimable rows for `run`, from the first on.
    public func claim(campaign: Int64, run: Int64, limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        try await claimNext(campaign: campaign, run: run, limit: limit, lease: lease, after: 0).deliveries
    }

    /// How long until the campaign's next queued delivery may be sent, when
    /// one is queued at all (a backoff, quiet hours).
    public func nextDue(campaign: Int64) async throws -> Duration? {
        let rows = try await client.query("""
            SELECT greatest(extract(epoch FROM min(not_before) - now()), 0)::float8
            FROM deliveries WHERE campaign_id = \(campaign) AND status = 'queued'
            HAVING count(*) > 0
            """, logger: logger)
        for try await seconds in rows.decode(Double.self) { return .milliseconds(Int64(seconds * 1000)) }
        return nil
    }

    private static func claimed(_ rows: PostgresRowSequence) async throws -> [ClaimedDelivery] {
        var out: [ClaimedDelivery] = []
        for try await (id, deviceID, token, env, locale, key, kid, apnsID, variant) in rows.decode(
            (Int64, Int64, String, String, String, String?, String?, UUID?, String?).self) {
            out.append(ClaimedDelivery(
                target: DeliveryTarget(deliveryID: id, deviceToken: token, environment: env, locale: locale,
                                       publicKey: key, keyID: kid, apnsID: apnsID ?? UUID(), variant: variant),
                deviceID: deviceID))
        }
        return out
    }

    /// Writes a batch of `run`'s outcomes with one statement, and
    /// invalidates the devices APNs said are gone with another. Fenced: an
    /// outcome is written only while `run` still holds the delivery (its
    /// lease was not taken over). A delivery given back (`queued`, `retry`)
    /// of a campaign cancelled meanwhile is cancelled. Returns how many
    /// outcomes were written.
    ///
    /// The outcomes are of deliveries of `campaign` (nil: config refresh
    /// pushes), which lets the statement read that campaign's partition of
    /// the ledger only (Sql/0010); an outcome of another campaign is not
    /// written.
    @discardableResult
    public func record(_ outcomes: [DeliveryOutcome], run: Int64, campaign: Int64?) async throws -> Int {
        guard !outcomes.isEmpty else { return 0 }
        let ids = outcomes.map(\.deliveryID)
        let statuses = outcomes.map(\.status.rawValue)
        let errors = outcomes.map { $0.error ?? "" }
        let attempts = outcomes.map { Int32(clamping: $0.attempts) }
        let delays = outcomes.map(\.delay)
        let rows = try await client.query("""
            WITH o AS (
                SELECT * FROM unnest(\(ids)::bigint[], \(statuses)::text[], \(errors)::text[], \(attempts)::int4[], \(delays)::float8[])
                    AS o(id, status, error, attempts, delay)
            ), w AS (
                UPDATE deliveries AS d SET
                    status = CASE WHEN o.status NOT IN ('queued', 'retry') THEN o.status
                                  WHEN (SELECT c.status FROM campaigns c WHERE c.id = d.campaign_id) = 'cancelled' THEN 'cancelled'
                                  ELSE 'queued' END,
                    last_error = CASE WHEN o.status IN ('queued', 'retry') AND (SELECT c.status FROM campaigns c WHERE c.id = d.campaign_id) = 'cancelled' THEN 'campaign cancelled'
                                      WHEN o.status = 'queued' AND o.error = '' THEN d.last_error
                                      ELSE nullif(o.error, '') END,
                    attempts = d.attempts + o.attempts,
                    -- The wait was decided by the run's DeliveryPolicy; SQL only stores it.
                    not_before = CASE WHEN o.status IN ('queued', 'retry')
                                      THEN greatest(d.not_before, now() + make_interval(secs => o.delay))
                                      ELSE d.not_before END,
                    sent_at = CASE WHEN o.status = 'sent' THEN now() ELSE d.sent_at END,
                    claimed_by = CASE WHEN o.status IN ('queued', 'retry') THEN NULL ELSE d.claimed_by END,
                    refresh_open = CASE WHEN o.status IN ('queued', 'retry') THEN d.refresh_open END,
                    lease_expires_at = NULL,
                    updated_at = now()
                FROM o
                -- IS NOT DISTINCT FROM keeps the planner on the ids: a run's id
                -- is always new to the statistics, and reading all its rows
                -- through deliveries_claimed grows with every write.
                WHERE \(unescaped: campaign.map { "d.campaign_id = \($0)" } ?? "d.campaign_id IS NULL")
                  AND d.id = o.id AND d.claimed_by IS NOT DISTINCT FROM \(run) AND d.status = 'in_flight'
                RETURNING d.id
            )
            SELECT count(*)::bigint FROM w
            """, logger: logger)
        var written = 0
        for try await n in rows.decode(Int64.self) { written = Int(n) }
        if written < outcomes.count {
            logger.warning("outcomes of deliveries this run no longer holds were not written", metadata: [
                "run": "\(run)", "outcomes": "\(outcomes.count)", "written": "\(written)",
            ])
        }
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
        return written
    }

    /// Marks the campaign completed when nothing of it is left to send.
    /// Returns true when it did.
    public func completeIfDone(_ campaign: Int64) async throws -> Bool {
        let rows = try await client.query("""
            UPDATE campaigns SET status = 'completed', completed_at = now()
            WHERE id = \(campaign) AND status = 'running' AND snapshot_through IS NULL
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
