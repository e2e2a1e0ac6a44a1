import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Runs and their leases: a run's row holds the one lease of every delivery
/// it claimed (`runs.lease_expires_at`), renewed while it lives; a run that
/// stops renewing, or whose database session is gone, gives its claims back.
public struct RunStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    public func beginRun(host: String, pid: Int32, dryRun: Bool, lease: Duration = .seconds(300)) async throws -> Int64 {
        let seconds = Double(lease.components.seconds)
        let rows = try await client.query(try SQLQueries.named("runs/begin-run").query([
            "host": .value(host), "pid": .value(pid), "dry_run": .value(dryRun), "seconds": .value(seconds),
        ]), logger: logger)
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
    /// campaign was cancelled; its spans open at their watermarks. A run
    /// another run declared gone (its leases expired) keeps that verdict.
    /// Returns how many deliveries were given back.
    @discardableResult
    public func finishRun(_ id: Int64, figures f: RunFigures, end: RunEnd, error: String?) async throws -> Int {
        let held = try await claimedPartitions(of: [id])
        let rows = try await client.query(try SQLQueries.named("runs/finish-run").query([
            "run": .value(id), "status": .value(end.rawValue), "error": .value(error),
            "claimed_campaigns": .value(held.campaigns), "claimed_refreshes": .value(held.refreshes),
            "campaigns": .value(f.campaigns), "targeted": .value(f.targeted), "sent": .value(f.sent),
            "invalid": .value(f.invalid), "failed": .value(f.failed), "retried": .value(f.retried),
            "skipped": .value(f.skipped), "expired": .value(f.expired), "requeued": .value(f.requeued),
        ], fragments: ["given_back": DeliveryLedger.givenBack("d")]), logger: logger)
        for try await (back, _, _) in rows.decode((Int64, Int64, Int64).self) { return Int(back) }
        return 0
    }

    /// The ledger partitions where `runs` may hold deliveries in flight:
    /// the campaigns their claims recorded (`runs.claimed_campaigns`) and
    /// the config refresh pushes' rows (`claimed_refreshes`). Statements
    /// that look for a run's in-flight rows name these, as binds that
    /// PostgreSQL prunes the other partitions with when it plans the
    /// statement (no index of `deliveries` names `claimed_by`, so that a
    /// claim is a HOT update).
    struct ClaimedPartitions {
        var campaigns: [Int64] = []
        var refreshes = false
    }

    func claimedPartitions(of runs: [Int64], orLapsedAfter lease: Duration? = nil, besides current: Int64 = 0) async throws -> ClaimedPartitions {
        let seconds = lease.map { Double($0.components.seconds) } ?? -1
        let rows = try await client.query(try SQLQueries.named("runs/claimed-partitions").query([
            "runs": .value(runs), "seconds": .value(seconds), "current": .value(current),
        ]), logger: logger)
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
        let rows = try await client.query(try SQLQueries.named("runs/renew-leases").query([
            "run": .value(run), "seconds": .value(seconds),
        ]), logger: logger)
        for try await _ in rows.decode(Int32.self) { return true }
        return false
    }

    /// Takes (or confirms) `run`'s lock on the session of `connection`, a
    /// connection the run keeps for its life (`herald_hold_run`); false when another
    /// session holds it.
    public func holdRun(_ run: Int64, on connection: PostgresConnection) async throws -> Bool {
        for try await held in try await connection.query("SELECT herald_hold_run(\(run))", logger: logger).decode(Bool.self) {
            return held
        }
        return false
    }

    /// Gives `run`'s lock back on the session of `connection`.
    public func releaseRun(_ run: Int64, on connection: PostgresConnection) async throws {
        try await connection.query("SELECT herald_release_run(\(run))", logger: logger)
    }

    /// Other runs still marked running whose own database session is gone
    /// (`herald_run_gone`), for `recoverAbandoned`.
    public func goneRuns(besides run: Int64) async throws -> [Int64] {
        let rows = try await client.query(try SQLQueries.named("runs/gone-runs").query(["run": .value(run)]),
                                          logger: logger)
        var out: [Int64] = []
        for try await id in rows.decode(Int64.self) { out.append(id) }
        return out
    }

    /// Runs that stopped renewing for a whole lease (crashed, hung, cut off
    /// from the database), and `deadRuns` (runs known to be gone: their
    /// database session ended), are marked failed, and the deliveries they
    /// held go back to the queue. (A claim also takes over the deliveries of
    /// a run whose lease lapsed, without waiting for this.)
    public func recoverAbandoned(currentRun: Int64, deadRuns: [Int64], lease: Duration) async throws -> Int {
        let seconds = Double(lease.components.seconds)
        let held = try await claimedPartitions(of: deadRuns, orLapsedAfter: lease, besides: currentRun)
        let rows = try await client.query(try SQLQueries.named("runs/recover-abandoned").query([
            "current_run": .value(currentRun), "dead_runs": .value(deadRuns), "seconds": .value(seconds),
            "claimed_campaigns": .value(held.campaigns), "claimed_refreshes": .value(held.refreshes),
        ], fragments: ["given_back": DeliveryLedger.givenBack("d")]), logger: logger)
        for try await (n, _) in rows.decode((Int64, Int64).self) { return Int(n) }
        return 0
    }
}
