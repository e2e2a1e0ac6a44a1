import Foundation
import Logging
import PostgresNIO
import Store
import Testing
import TestSupport

actor Counter {
    var n = 0
    func next() -> Int {
        n += 1
        return n
    }
}

@Suite("Database faults: retried, or blamed on the campaign")
struct DatabaseFaultTests {
    static func error(_ client: Database, state: String) async -> (any Error)? {
        do {
            try await client.query(PostgresQuery(unsafeSQL: "DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '\(state)'; END $$"),
                                   logger: TestDatabase.logger)
            return nil
        } catch {
            return error
        }
    }

    /// The golden table of `DatabaseFault`: the server's own errors, raised
    /// by the server, each sorted by what its callers do with it.
    @Test func serverErrorsAreSortedByCause() async throws {
        let table: [(state: String, fault: DatabaseFault)] = [
            ("57P01", .transient), ("57P03", .transient), ("40001", .transient), ("40P01", .transient),
            ("57014", .transient), ("25006", .transient), ("08006", .transient), ("53300", .transient),
            ("55P03", .transient),
            ("23514", .refusedValues), ("23505", .refusedValues), ("22023", .refusedValues), ("P0001", .refusedValues),
            ("42601", .refusedStatement), ("42703", .refusedStatement), ("2F005", .refusedStatement),
            ("XX000", .bug), ("0A000", .bug),
        ]
        try await TestDatabase.with { client, _ in
            for row in table {
                let e = try #require(await Self.error(client, state: row.state))
                #expect(DatabaseFault(e) == row.fault, "\(row.state)")
            }
            // Inside a transaction, what failed first decides.
            do {
                _ = try await client.withTransaction(logger: TestDatabase.logger) { conn in
                    try await conn.query("DO $$ BEGIN RAISE EXCEPTION 'x' USING ERRCODE = '40P01'; END $$", logger: TestDatabase.logger)
                }
                Issue.record("no error")
            } catch {
                #expect(error is PostgresTransactionError)
                #expect(DatabaseFault(error) == .transient)
            }
        }
        #expect(DatabaseFault(CancellationError()) == .bug)
        #expect(DatabaseFault.refusedStatement.isCampaignsOwn && DatabaseFault.refusedValues.isCampaignsOwn)
        #expect(!DatabaseFault.transient.isCampaignsOwn && !DatabaseFault.bug.isCampaignsOwn)
    }

    @Test func aDeadlockAndASerializationFailureAreRetried() async throws {
        try await TestDatabase.with { client, _ in
            let tries = Counter()
            let retry = DatabaseRetry(budget: .seconds(20), attemptTimeout: .seconds(10), logger: TestDatabase.logger)
            let value = try await retry("test") {
                let n = await tries.next()
                if n <= 2 {
                    let state = n == 1 ? "40P01" : "40001"
                    try await client.query(PostgresQuery(unsafeSQL: "DO $$ BEGIN RAISE EXCEPTION 'lost a race' USING ERRCODE = '\(state)'; END $$"),
                                           logger: TestDatabase.logger)
                }
                return try await client.scalar("SELECT 42", as: Int32.self) ?? 0
            }
            #expect(value == 42)
            #expect(await tries.n == 3)
        }
    }

    @Test func aCallThatNeverAnswersEndsAtItsDeadline() async throws {
        // A body that ignores cancellation: the caller still gets its answer at the deadline.
        await #expect(throws: DatabaseCallTimedOut.self) {
            _ = try await DatabaseRetry.withDeadline(.milliseconds(200), what: "test") { () async throws -> Int in
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    Task.detached {
                        try? await Task.sleep(for: .seconds(3))
                        c.resume()
                    }
                }
                return 1
            }
        }
    }

    @Test func aDatabaseThatStaysAwayEndsTheBudget() async throws {
        // Nothing listens on this port.
        let config = try DatabaseConfiguration(url: "postgres://herald@127.0.0.1:9/none", maxConnections: 1)
        try await withPostgres(config, logger: TestDatabase.logger) { client in
            let retry = DatabaseRetry(budget: .seconds(2), attemptTimeout: .seconds(1), logger: TestDatabase.logger)
            await #expect(throws: DatabaseUnavailable.self) {
                _ = try await retry("test") { try await client.scalar("SELECT 1", as: Int32.self) }
            }
        }
    }

    @Test func aConstraintIsNotRetried() async throws {
        try await TestDatabase.with { client, _ in
            let tries = Counter()
            let retry = DatabaseRetry(budget: .seconds(20), logger: TestDatabase.logger)
            await #expect(throws: PSQLError.self) {
                try await retry("test") {
                    _ = await tries.next()
                    try await client.query("INSERT INTO settings DEFAULT VALUES", logger: TestDatabase.logger)
                }
            }
            #expect(await tries.n == 1)
        }
    }
}
