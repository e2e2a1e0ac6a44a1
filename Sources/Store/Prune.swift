import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// `herald prune`: drops the ledger partitions of finished campaigns
/// (made by `herald_delivery_partition`). Each campaign goes in one
/// transaction that keeps what the analyst views read of its ledger
/// (pruned_delivery_counts, pruned_test_deliveries, pruned_answered_deliveries,
/// pruned_sent_minutes, pruned_lift_assignments; the views add them to the
/// live ledger), and detaches and drops its partition. Replies are never touched. Needs the
/// schema owner: detaching and dropping a partition is the owner's right,
/// not herald_job's.
public struct PruneStore: Sendable {
    public let client: Database
    public let logger: Logger
    /// How long a prune waits for a lock before giving up on that campaign
    /// (the detach needs a moment of ACCESS EXCLUSIVE on deliveries; a run
    /// or an analyst's query holding it long must not be queued behind).
    public var lockTimeout: Duration

    public init(client: Database, logger: Logger, lockTimeout: Duration = .seconds(10)) {
        self.client = client
        self.logger = logger
        self.lockTimeout = lockTimeout
    }

    /// Campaigns that may be pruned now: finished (completed, cancelled,
    /// failed or archived) with nothing queued or in flight, not pruned
    /// before, with a ledger, whose last activity is older than `olderThan`
    /// and than the frequency window (settings.frequency_window: the cap
    /// counts sent deliveries of that long ago). Oldest first.
    public func candidates(olderThan: Duration) async throws -> [PruneCandidate] {
        let seconds = olderThan.inSeconds
        let rows = try await client.query("""
            WITH parts AS (
                SELECT p.relname::text AS relname, substring(p.relname FROM '^deliveries_c([0-9]+)$')::bigint AS campaign_id
                FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
                WHERE i.inhparent = 'public.deliveries'::regclass
            ), c AS (
                SELECT c.id, c.name, c.status, c.completed_at, c.created_at, parts.relname
                FROM campaigns c LEFT JOIN parts ON parts.campaign_id = c.id
                WHERE c.status IN ('completed', 'cancelled', 'failed', 'archived')
                  AND NOT EXISTS (SELECT 1 FROM pruned_campaigns pc WHERE pc.campaign_id = c.id)
                  AND (parts.relname IS NOT NULL OR EXISTS (SELECT 1 FROM deliveries_default dd WHERE dd.campaign_id = c.id))
            ), l AS (
                SELECT c.*, x.n, x.pending, x.last_write
                FROM c CROSS JOIN LATERAL (
                    SELECT count(*) AS n,
                           count(*) FILTER (WHERE d.status IN ('queued', 'in_flight')) AS pending,
                           max(d.updated_at) AS last_write
                    FROM delivery_status d WHERE d.campaign_id = c.id) x
            )
            SELECT l.id, l.name, l.status,
                   coalesce(greatest(l.completed_at, l.last_write), l.created_at) AS last_activity,
                   l.n, l.relname
            FROM l, settings st
            WHERE l.pending = 0
              AND coalesce(greatest(l.completed_at, l.last_write), l.created_at)
                  < now() - greatest(make_interval(secs => \(seconds)), st.frequency_window)
            ORDER BY last_activity, l.id
            """, logger: logger)
        var out: [PruneCandidate] = []
        for try await (id, name, status, last, n, part) in rows.decode((Int64, String, String, Date, Int64, String?).self) {
            out.append(PruneCandidate(campaignID: id, name: name, status: status, lastActivity: last,
                                      deliveries: n, partition: part))
        }
        return out
    }

    /// Prunes one campaign found by `candidates`, checking again under lock
    /// that it still may go (a campaign resumed meanwhile is left alone).
    /// With `exportDirectory`, its ledger rows are first written there, one
    /// JSON object a line (`deliveries_c<ID>.jsonl`, the columns of
    /// `deliveries`), complete before the drop commits.
    public func prune(_ candidate: PruneCandidate, exportDirectory: URL?) async throws -> PruneResult {
        let timeoutMS = Int(lockTimeout.components.seconds * 1000) + Int(lockTimeout.components.attoseconds / 1_000_000_000_000_000)
        do {
            return try await prune(candidate, exportDirectory: exportDirectory, timeoutMS: timeoutMS)
        } catch where DatabaseFault(error) == .transient {
            // A lock not had in time (the run or the intake holds the
            // partition), a restart or a deadlock: the campaign is pruned later.
            return .busy
        } catch let e as PostgresTransactionError {
            throw e.closureError ?? e.commitError ?? e.beginError ?? e
        }
    }

    private func prune(_ candidate: PruneCandidate, exportDirectory: URL?, timeoutMS: Int) async throws -> PruneResult {
        let id = candidate.campaignID
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { conn in
            try await conn.query(PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = \(max(timeoutMS, 1))"), logger: logger)
            // The campaign row, locked: nobody resumes it while it goes.
            var status: String?
            for try await s in try await conn.query(
                "SELECT status FROM campaigns WHERE id = \(id) FOR UPDATE", logger: logger).decode(String.self) {
                status = s
            }
            guard let status, ["completed", "cancelled", "failed", "archived"].contains(status) else {
                return .left(reason: "it is \(status ?? "gone") now, not finished")
            }
            var state = (pruned: false, pending: false, inDefault: false)
            for try await row in try await conn.query("""
                SELECT EXISTS (SELECT 1 FROM pruned_campaigns WHERE campaign_id = \(id)),
                       EXISTS (SELECT 1 FROM delivery_status WHERE campaign_id = \(id) AND status IN ('queued', 'in_flight')),
                       EXISTS (SELECT 1 FROM deliveries_default WHERE campaign_id = \(id))
                """, logger: logger).decode((Bool, Bool, Bool).self) {
                state = row
            }
            if state.pruned { return .left(reason: "it was pruned already") }
            if state.pending { return .left(reason: "it has deliveries queued or in flight") }
            // Rows written before it had a partition of their own move into
            // one first, so that what goes is always one partition, dropped
            // whole (and no row with replies is ever deleted).
            if state.inDefault {
                var made = false
                for try await m in try await conn.query("SELECT herald_delivery_partition(\(id))", logger: logger).decode(Bool.self) {
                    made = m
                }
                if !made { return .busy }
            }
            guard let partition = try await Self.partition(of: id, conn: conn, logger: logger) else {
                return .left(reason: "it has no ledger partition")
            }
            let name = Self.quoted(partition)
            // Read only from here on.
            try await conn.query(PostgresQuery(unsafeSQL: "LOCK TABLE \(name) IN SHARE MODE"), logger: logger)
            var exported: URL?
            if let exportDirectory {
                exported = try await Self.export(campaign: id, to: exportDirectory, conn: conn, logger: logger)
            }
            var dropped: Int64 = 0
            for try await n in try await conn.query("""
                INSERT INTO pruned_campaigns (campaign_id, deliveries, exported_to)
                SELECT \(id), count(*), \(exported?.path) FROM deliveries WHERE campaign_id = \(id)
                RETURNING deliveries
                """, logger: logger).decode(Int64.self) {
                dropped = n
            }
            // What the analyst views read of the ledger, kept in the pruned_* tables:
            // the counts by status, reason, app and variant (campaign_funnel,
            // delivery_problems, apps, variant_comparison); ...
            try await conn.query("""
                INSERT INTO pruned_delivery_counts (campaign_id, status, reason, deliveries, app, variant)
                SELECT \(id), d.status, d.last_error, count(*), coalesce(dv.app, 'default'), d.variant
                FROM delivery_status d LEFT JOIN devices dv ON dv.id = d.device_id
                WHERE d.campaign_id = \(id) AND d.kind = 'campaign'
                GROUP BY d.status, d.last_error, coalesce(dv.app, 'default'), d.variant
                """, logger: logger)
            // ... the deliveries a receipt or a reply refers to, for their
            // variant and sent_at (variant_comparison, variant_actions,
            // delivery_confirmation) ...
            try await conn.query("""
                INSERT INTO pruned_answered_deliveries (id, campaign_id, variant, sent_at)
                SELECT d.id, d.campaign_id, d.variant, d.sent_at FROM delivery_status d
                WHERE d.campaign_id = \(id) AND d.kind = 'campaign'
                  AND (EXISTS (SELECT 1 FROM receipts r WHERE r.campaign_id = d.campaign_id AND r.delivery_id = d.id)
                       OR EXISTS (SELECT 1 FROM replies r WHERE r.campaign_id = d.campaign_id AND r.delivery_id = d.id))
                """, logger: logger)
            // ... the sent deliveries per minute (pace) ...
            try await conn.query("""
                INSERT INTO pruned_sent_minutes (campaign_id, minute, sent, first_sent, last_sent)
                SELECT \(id), date_trunc('minute', d.sent_at), count(*), min(d.sent_at), max(d.sent_at)
                FROM delivery_status d
                WHERE d.campaign_id = \(id) AND d.kind = 'campaign' AND d.status = 'sent'
                GROUP BY date_trunc('minute', d.sent_at)
                """, logger: logger)
            // ... and, when it held users out, each user's arm (lift).
            try await conn.query("""
                INSERT INTO pruned_lift_assignments (campaign_id, user_id, treated, variant, assigned_at)
                SELECT \(id), d.user_id, bool_or(d.status <> 'held_out'),
                       min(d.variant) FILTER (WHERE d.status <> 'held_out'), min(d.created_at)
                FROM deliveries d
                WHERE d.campaign_id = \(id) AND d.kind = 'campaign'
                  AND EXISTS (SELECT 1 FROM deliveries h WHERE h.campaign_id = \(id) AND h.kind = 'campaign' AND h.status = 'held_out')
                GROUP BY d.user_id
                """, logger: logger)
            // The test sends, by the columns pruned_test_deliveries has (a
            // column added to deliveries later is kept once added there too).
            var columns = ""
            for try await list in try await conn.query("""
                SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
                WHERE attrelid = 'public.pruned_test_deliveries'::regclass AND attnum > 0 AND NOT attisdropped
                """, logger: logger).decode(String.self) {
                columns = list
            }
            try await conn.query("""
                INSERT INTO pruned_test_deliveries (\(unescaped: columns)) SELECT \(unescaped: columns) FROM deliveries
                WHERE campaign_id = \(id) AND kind = 'test'
                """, logger: logger)
            try await conn.query("DELETE FROM delivery_spans WHERE campaign_id = \(id)", logger: logger)
            try await conn.query(PostgresQuery(unsafeSQL: "ALTER TABLE deliveries DETACH PARTITION \(name)"), logger: logger)
            try await conn.query(PostgresQuery(unsafeSQL: "DROP TABLE \(name)"), logger: logger)
            return .pruned(PruneOutcome(candidate: candidate, deliveries: dropped, exportedTo: exported))
        }
    }

    private static func partition(of campaign: Int64, conn: PostgresConnection, logger: Logger) async throws -> String? {
        let rows = try await conn.query("""
            SELECT p.relname::text FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
            WHERE i.inhparent = 'public.deliveries'::regclass AND p.relname = \("deliveries_c\(campaign)")
            """, logger: logger)
        for try await name in rows.decode(String.self) { return name }
        return nil
    }

    /// `deliveries_c<digits>` only ever: quoted all the same.
    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Streams the campaign's ledger rows into `dir/deliveries_c<ID>.jsonl`
    /// (written to a temporary name, flushed, then renamed).
    private static func export(campaign: Int64, to dir: URL, conn: PostgresConnection, logger: Logger) async throws -> URL {
        let file = dir.appendingPathComponent("deliveries_c\(campaign).jsonl")
        let temp = dir.appendingPathComponent(".deliveries_c\(campaign).jsonl.partial")
        guard FileManager.default.createFile(atPath: temp.path, contents: nil) else {
            throw InputError("prune: cannot write \(temp.path); is --export a writable directory?")
        }
        let handle: FileHandle
        do {
            handle = try FileHandle(forWritingTo: temp)
        } catch {
            throw InputError("prune: cannot write \(temp.path): \(error.localizedDescription)")
        }
        do {
            var buffer = Data()
            buffer.reserveCapacity(1 << 20)
            let rows = try await conn.query(
                "SELECT to_jsonb(d)::text FROM delivery_status d WHERE d.campaign_id = \(campaign) ORDER BY d.id", logger: logger)
            for try await line in rows.decode(String.self) {
                buffer.append(contentsOf: line.utf8)
                buffer.append(0x0A)
                if buffer.count >= 1 << 20 {
                    try handle.write(contentsOf: buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            try handle.write(contentsOf: buffer)
            try handle.synchronize()
            try handle.close()
            if FileManager.default.fileExists(atPath: file.path) {
                try FileManager.default.removeItem(at: file)
            }
            try FileManager.default.moveItem(at: temp, to: file)
        } catch {
            try? handle.close()
            try? FileManager.default.removeItem(at: temp)
            if error is StoreError || error is PSQLError { throw error }
            throw InputError("prune: cannot write \(file.path): \(error.localizedDescription)")
        }
        return file
    }
}
