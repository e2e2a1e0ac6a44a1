import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// A run is alive while its own database session holds its lock
/// (Sql/0034, `herald_hold_run` and `herald_run_gone`).
@Suite("Run liveness by database session")
struct RunSessionTests {
    @Test func aRunIsGoneExactlyWhenItsSessionIsAndTheServerStayedUp() async throws {
        try await TestDatabase.with { client, config in
            let runs = RunStore(client: client, logger: TestDatabase.logger)
            let a = try await runs.beginRun(host: "same-host", pid: 1, dryRun: false)
            let b = try await runs.beginRun(host: "same-host", pid: 1, dryRun: false)
            let never = try await runs.beginRun(host: "old-binary", pid: 7, dryRun: false)
            // Another process's connection holds a's lock: a is alive, whatever its host and pid.
            try await withPostgres(config, logger: TestDatabase.logger) { other in
                try await other.withConnection { connection in
                    #expect(try await runs.holdRun(a, on: connection))
                    #expect(try await runs.holdRun(a, on: connection), "confirming it again")
                    let second = try await client.withConnection { mine in try await runs.holdRun(a, on: mine) }
                    #expect(!second, "a second session took a lock that is held")
                    #expect(try await runs.goneRuns(besides: b) == [])
                    // Its session ends (a killed process): gone at once.
                    var pid: Int32 = 0
                    for try await p in try await connection.query("SELECT pg_backend_pid()", logger: TestDatabase.logger).decode(Int32.self) { pid = p }
                    try await client.exec("SELECT pg_terminate_backend(\(pid))")
                    try await waitForGone(runs, [a], besides: b)
                }
            }
            // A run that never held its lock (written by an older binary) is left to its lease.
            #expect(try await runs.goneRuns(besides: b).contains(never) == false)

            // After a restart or failover (another server incarnation), a run has the grace to come back.
            try await client.exec("""
                UPDATE runs SET session_server = '2000-01-01', session_at = now() WHERE id = \(b);
                """)
            #expect(try await runs.goneRuns(besides: a).contains(b) == false)
            try await client.exec("UPDATE runs SET session_at = now() - interval '1 minute' WHERE id = \(b)")
            #expect(try await runs.goneRuns(besides: a).contains(b))
            // A run that finished is never gone.
            try await client.exec("UPDATE runs SET status = 'succeeded' WHERE id = \(b)")
            #expect(try await runs.goneRuns(besides: a).contains(b) == false)
        }
    }

    /// `pg_terminate_backend` returns before the session's locks are released.
    func waitForGone(_ runs: RunStore, _ expected: [Int64], besides: Int64) async throws {
        for _ in 0..<100 {
            if try await runs.goneRuns(besides: besides) == expected { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await runs.goneRuns(besides: besides) == expected)
    }
}
