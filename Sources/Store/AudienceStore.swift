import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// The audience snapshot: a campaign's delivery rows written set-based, in
/// slices of device ids (`campaigns.snapshot_through`), into its own ledger partition.
public struct AudienceStore: Sendable {
    public let client: Database
    public let logger: Logger

    /// Why a device is skipped for a campaign with sealed fields (the snapshot's and the run's words).
    public static let noKey = "device has no registered key for the sealed fields"

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Writes the campaign's audience into `deliveries`, set-based. A
    /// campaign is snapshotted once, whether it is due as `scheduled` or was
    /// resumed as `running`; a device already in its ledger is left alone.
    ///
    /// With `start` (a run) the audience is written in slices of device ids,
    /// each in a transaction of its own, and this writes the
    /// next slice only: the first moves the campaign to `running` and sets
    /// `snapshot_at` (the variants are frozen from then on), each records
    /// how far it got (`campaigns.snapshot_through`), the last clears it. The result
    /// says whether the snapshot is complete; the run sends the slices
    /// written while it writes the next (`firstSlice` device ids first, then
    /// each slice three times as large as all before it). Without `start`
    /// (a dry run) the whole audience is written in one statement, and the
    /// campaign stays as it was.
    /// `spans`: rows due at once are written as batch rows, sent by ranges (the campaign's
    /// plan decides, `CampaignPlan.sendsBySpans`, with `RunOptions.spans`); false: every row
    /// goes row by row.
    public func snapshot(_ due: DueCampaign, start: Bool, firstSlice: Int64 = defaultFirstSlice,
                         spans: Bool = false) async throws -> SnapshotResult {
        let c = due.campaign
        let logger = self.logger
        // Its partition first, in a transaction of its own (only for a
        // campaign still to snapshot: one resumed after a prune has none).
        for try await pending in try await client.query("""
            SELECT (snapshot_at IS NULL OR snapshot_through IS NOT NULL) AND status IN ('scheduled', 'running')
            FROM campaigns WHERE id = \(c.id)
            """, logger: logger).decode(Bool.self) where pending {
            if try await !ensurePartition(campaign: c.id, writtenOnce: spans) {
                logger.warning("the campaign's ledger partition could not be made now (a lock was busy); its deliveries go to deliveries_default",
                               metadata: ["campaign": "\(c.id)"])
            }
        }
        let result = try await client.withTransaction(logger: logger) { conn -> (snapshot: SnapshotResult, analyze: Bool) in
            // NO KEY: slices still exclude each other and every change of the
            // campaign, but a span's claim (whose foreign key locks the row
            // FOR KEY SHARE) no longer waits for a slice to commit.
            let statusRows = try await conn.query("""
                SELECT status, snapshot_at IS NULL, snapshot_through, (SELECT max(id) FROM devices)
                FROM campaigns WHERE id = \(c.id) FOR NO KEY UPDATE
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
            let step = max(firstSlice, min(grown.overflow ? .max : grown.partialValue, Self.maxSlice), 1)
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
            // No JIT: a slice's cost estimate calls for it, but its lookups a device gain nothing from it.
            try await conn.query("SET LOCAL jit = off", logger: logger)
            // A capped campaign's slices count the sends before the first
            // one (`snapshot_caps`): found once, not by each slice from the ledger.
            // (A snapshot of one slice finds them in its own statement.)
            let storedCaps = start && c.frequencyCapped && !(low == 0 && last)
            if storedCaps { try await Self.storeCaps(campaign: c.id, on: conn, logger: logger) }
            let query = try Self.snapshotQuery(due, devices: low...high, skippingWritten: written, storedCaps: storedCaps,
                                               spans: spans)
            var done = try await Self.insertAudience(query, on: conn, logger: logger)
            done.complete = last
            if start {
                try await conn.query("""
                    UPDATE campaigns SET status = 'running', started_at = coalesce(started_at, now()),
                        snapshot_at = coalesce(snapshot_at, now()),
                        snapshot_through = \(last ? nil : high as Int64?)
                    WHERE id = \(c.id)
                    """, logger: logger)
                if last && storedCaps {
                    try await conn.query("DELETE FROM snapshot_caps WHERE campaign_id = \(c.id)", logger: logger)
                }
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
    /// of all slices before it (four statements for a million devices):
    /// each slice has fixed costs of its own (planning, its commit), so
    /// fewer slices cost less.
    static let sliceGrowth: Int64 = 3

    /// No slice spans more device ids than this, so no transaction grows
    /// with the audience. A
    /// slice looks up its own devices' users by id (`snapshotQuery`), so it
    /// does not read more of the users table as the audience grows.
    static let maxSlice: Int64 = 1_000_000

    /// The device ids of a run's first snapshot slice: small, so that
    /// sending starts soon.
    public static let defaultFirstSlice: Int64 = 50_000

    /// A snapshot of at least this many rows is followed by ANALYZE of the
    /// campaign's ledger rows: the statistics the claims are planned with
    /// must know the campaign, or the claims are planned badly.
    public static let analyzeAfter = 10_000

    /// SQL: the users at their frequency cap when `enabled` (an SQL boolean) holds
    /// (`audience/capped-users`).
    static func cappedUsers(when enabled: String) throws -> String {
        try SQLQueries.named("audience/capped-users").filling(["enabled": enabled]).source
    }

    /// Keeps the campaign's frequency-capped users for the slices of its snapshot
    /// (`audience/store-caps`), unless kept already.
    static func storeCaps(campaign: Int64, on conn: PostgresConnection, logger: Logger) async throws {
        try await conn.query(try SQLQueries.named("audience/store-caps").query(
            ["campaign": .value(campaign)], fragments: ["capped": try cappedUsers(when: "true")]), logger: logger)
    }

    /// Gives the campaign a partition of the ledger of its own, when it has
    /// none yet (`herald_delivery_partition`), in a transaction of
    /// its own: the partition is made with locks a run must not hold while
    /// it writes. Returns false when the locks were busy and the campaign's
    /// rows go to the DEFAULT partition instead (correct, slower to prune).
    /// `writtenOnce`: the campaign is sent by ranges, so its partition is
    /// made at fillfactor 100 (`herald_delivery_partition`'s `written_once`).
    /// Throws for a campaign whose ledger was pruned.
    @discardableResult
    public func ensurePartition(campaign: Int64, writtenOnce: Bool = false) async throws -> Bool {
        let rows = try await client.query("SELECT herald_delivery_partition(\(campaign), \(writtenOnce))", logger: logger)
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

    /// `previewSnapshot`, then each queued device of the would-be audience
    /// with its values of `variables`, handed to `each` inside the same
    /// rolled-back transaction (a preview of text made for each person).
    public func previewSnapshot(_ due: DueCampaign, variables: [Template.Variable],
                                each: (DeliveryLedger.PersonalSample) throws -> Void) async throws -> SnapshotResult {
        let query = try Self.snapshotQuery(due)
        let personal = try DeliveryLedger.personalQuery(campaign: due.campaign.id, variables: variables, deliveries: nil)
        let logger = self.logger
        return try await client.withConnection { conn in
            try await conn.query("BEGIN", logger: logger)
            do {
                let result = try await Self.insertAudience(query, on: conn, logger: logger)
                for try await row in try await conn.query(personal, logger: logger) {
                    var cells = RowCells(row)
                    let (id, values) = try DeliveryLedger.personalRow(&cells, variables: variables)
                    try each(DeliveryLedger.PersonalSample(
                        deliveryID: id, locale: try cells.next(String.self), variant: try cells.next(String?.self),
                        user: try cells.next(String.self), values: values))
                }
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
        for try await (n, q, s, d, k, f, h, names, devices, queued) in try await conn.query(query, logger: logger)
            .decode((Int64, Int64, Int64, Int64, Int64, Int64, Int64, [String], [Int64], [Int64]).self) {
            result = SnapshotResult(inserted: Int(n), queued: Int(q), skipped: Int(s), deferred: Int(d),
                                    skippedNoKey: Int(k), skippedCapped: Int(f))
            result.heldOut = Int(h)
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
    /// without a speculative insertion per row.
    /// `devices` bounds the device ids written (a slice: above its lower
    /// bound, up to its upper one).
    /// `storedCaps` reads the frequency-capped users from `snapshot_caps`
    /// (a run's slices, `storeCaps`); else the statement finds them itself.
    static func snapshotQuery(_ due: DueCampaign, devices: ClosedRange<Int64> = 0...Int64.max,
                              skippingWritten: Bool = true, storedCaps: Bool = false, spans: Bool = false) throws -> PostgresQuery {
        let c = due.campaign
        // A slice reads each of its devices' users by id (OFFSET 0 keeps the planner from
        // flattening it into a join that reads the users table whole in every slice); the
        // whole audience at once (a dry run, a preview) is a join.
        let sliced = devices != 0...Int64.max
        let statement = try SQLQueries.named("audience/snapshot").filling([
            "capped": storedCaps ? "SELECT unnest(sc.users) AS user_id FROM snapshot_caps sc WHERE :capped AND sc.campaign_id = :campaign"
                                 : try Self.cappedUsers(when: ":capped"),
            "users": sliced ? "CROSS JOIN LATERAL (SELECT * FROM users WHERE users.id = dv.user_id OFFSET 0) u"
                            : "JOIN users u ON u.id = dv.user_id",
            "conflict": skippingWritten ? "ON CONFLICT (campaign_id, device_id) WHERE kind = 'campaign' DO NOTHING" : "",
        ])
        // The segment's condition, compiled for this statement: its binds follow the named ones.
        let segment: CompiledSegment
        do {
            segment = try SegmentCompiler(firstPlaceholder: statement.parameters.count + 1, deviceAlias: "dv", userAlias: "u")
                .compile(due.segmentRule)
        } catch {
            throw CampaignProblem("\(due.segmentName.map { "segment \"\($0)\"" } ?? "segment"): \(error.description)")
        }
        return try statement.query([
            "campaign": .value(c.id),
            "sensitive": .value(c.hasSensitiveFields),
            "capped": .value(c.frequencyCapped),
            "quiet_hours": .value(c.quietHours),
            // The variants in name order and where each one's buckets begin (empty: none).
            "variants": .value(c.variants.map(\.name)),
            "variant_bounds": .value(c.variantLowerBounds.map { Int32($0) }),
            "after": .value(devices.lowerBound),
            "through": .value(devices.upperBound),
            // On segment entry (campaigns.series_id): the series whose earlier rows leave a
            // user out, and for how long (nil: for good).
            "on_entry": .value(due.entry != nil),
            "entry_series": .value(due.entry?.series),
            "resend_after": .value(due.entry?.resendAfter),
            // Each user's best hour (herald_best_hours): the campaign's choice, then each variant's.
            "best_hours": .value(c.bestHour || c.variants.contains { $0.bestHour == true }),
            "variant_best_hours": .value(c.variants.map { $0.bestHour ?? c.bestHour }),
            "best_hour": .value(c.bestHour),
            // Rows due at once are batch rows (delivery_spans), sent by ranges.
            "spans": .value(spans),
            "no_key": .value(Self.noKey),
        ], fragments: ["segment": segment.sql]) { $0.append(segment: segment) }
    }
}
