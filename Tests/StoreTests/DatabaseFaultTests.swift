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

    @Test func serverErrorsAreSortedByCause() async throws {
        try await TestDatabase.with { client, _ in
            for state in ["57P01", "57P03", "40001", "40P01", "57014", "25006", "08006"] {
                let e = try #require(await Self.error(client, state: state))
                #expect(DatabaseFault.isTransient(e), "\(state)")
                #expect(!DatabaseFault.isCampaignData(e), "\(state)")
            }
            for state in ["23514", "22023", "42601", "P0001"] {
                let e = try #require(await Self.error(client, state: state))
                #expect(!DatabaseFault.isTransient(e), "\(state)")
                #expect(DatabaseFault.isCampaignData(e), "\(state)")
            }
        }
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
