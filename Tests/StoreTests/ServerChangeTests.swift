import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// A statement in flight when the server in use changes (a failover) fails at once as a
/// transient fault, instead of waiting for an answer that a server gone away may never send.
@Suite("A call on a server that changes under it")
struct ServerChangeTests {
    @Test func aCallInFlightFailsAtOnceWhenItsServerIsDroppedAndTheNextCallGoesToTheServerChosenAgain() async throws {
        try await TestDatabase.with { owner, config in
            try await owner.exec("CREATE TABLE held (n int); INSERT INTO held VALUES (1)")
            // Two servers in the URL (the same one twice), read-write wanted: the chooser's own
            // monitor session is what tells it the server still fits.
            var both = config
            both.endpoints += config.endpoints
            both.targetSession = .readWrite
            try await withPostgres(both, logger: TestDatabase.logger) { client in
                _ = try await client.scalar("SELECT 1", as: Int32.self)
                // A statement that waits on a lock the test holds: in flight until the lock goes.
                try await owner.withTransaction(logger: TestDatabase.logger) { lock in
                    try await lock.query("LOCK TABLE held IN ACCESS EXCLUSIVE MODE", logger: TestDatabase.logger)
                    let clock = ContinuousClock()
                    let started = clock.now
                    let call = Task {
                        try await client.failingOnServerChange {
                            try await client.query("SELECT count(*) FROM held", logger: TestDatabase.logger)
                            return "answered"
                        }
                    }
                    try await waitUntilWaiting(lock)
                    // The chooser's monitor session ends: the server no longer answers its check, and is dropped.
                    try await lock.query("""
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE datname = current_database() AND query LIKE 'SELECT pg_is_in_recovery()%' AND pid <> pg_backend_pid()
                        """, logger: TestDatabase.logger)
                    let result = await call.result
                    let waited = clock.now - started
                    #expect(throws: DatabaseServerUnavailable.self) { try result.get() }
                    #expect(waited < .seconds(10), "failed when the server was dropped, not when the lock went")
                }
                // The same server, chosen again, answers the next call.
                try await waitUntilAnswered(client)
            }
        }
    }

    /// Until a statement of this database waits for a lock.
    func waitUntilWaiting(_ conn: PostgresConnection) async throws {
        for _ in 0..<200 {
            for try await n in try await conn.query("""
                SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                """, logger: TestDatabase.logger).decode(Int64.self) where n > 0 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("no statement waited for the lock")
    }

    func waitUntilAnswered(_ client: Database) async throws {
        for _ in 0..<100 {
            if (try? await client.scalar("SELECT 1", as: Int32.self)) == 1 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the server chosen again never answered")
    }
}
