import Logging
import PostgresNIO

/// Runs `body` with a connected client; the client's own task lives exactly
/// as long as `body` (structured: cancelling the group shuts the pool down).
public func withPostgres<T: Sendable>(
    _ configuration: DatabaseConfiguration, logger: Logger,
    _ body: @Sendable (Database) async throws -> T
) async throws -> T {
    let client = configuration.makeClient(logger: logger)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            await client.run()
            return nil
        }
        // Let the pool start before the first lease.
        await Task.yield()
        do {
            let result = try await body(client)
            group.cancelAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}
