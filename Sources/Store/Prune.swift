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
        let rows = try await client.query(try SQLQueries.named("prune/candidates").query(["seconds": .value(seconds)]),
                                          logger: logger)
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
            for try await row in try await conn.query(
                try SQLQueries.named("prune/campaign-state").query(["campaign": .value(id)]), logger: logger
            ).decode((Bool, Bool, Bool).self) {
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
            let record = try SQLQueries.named("prune/record-pruned").query([
                "campaign": .value(id), "exported_to": .value(exported?.path),
            ])
            for try await n in try await conn.query(record, logger: logger).decode(Int64.self) {
                dropped = n
            }
            // What the analyst views read of the ledger, kept in the pruned_* tables.
            for kept in ["prune/keep-delivery-counts", "prune/keep-answered-deliveries", "prune/keep-sent-minutes",
                         "prune/keep-lift-assignments"] {
                try await conn.query(try SQLQueries.named(kept).query(["campaign": .value(id)]), logger: logger)
            }
            // The test sends, by the columns pruned_test_deliveries has.
            var columns = ""
            for try await list in try await conn.query(
                try SQLQueries.named("prune/test-delivery-columns").query([:]), logger: logger
            ).decode(String.self) {
                columns = list
            }
            try await conn.query(try SQLQueries.named("prune/keep-test-deliveries").query(
                ["campaign": .value(id)], fragments: ["test_columns": columns]), logger: logger)
            try await conn.query("DELETE FROM delivery_spans WHERE campaign_id = \(id)", logger: logger)
            try await conn.query(PostgresQuery(unsafeSQL: "ALTER TABLE deliveries DETACH PARTITION \(name)"), logger: logger)
            try await conn.query(PostgresQuery(unsafeSQL: "DROP TABLE \(name)"), logger: logger)
            return .pruned(PruneOutcome(candidate: candidate, deliveries: dropped, exportedTo: exported))
        }
    }

    private static func partition(of campaign: Int64, conn: PostgresConnection, logger: Logger) async throws -> String? {
        let rows = try await conn.query(
            try SQLQueries.named("prune/partition").query(["partition": .value("deliveries_c\(campaign)")]), logger: logger)
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
