import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import ServiceLifecycle

/// The database a process talks to, as `DATABASE_URL` names it: a pool of connections to one
/// server, or, for a URL of several servers, to the one `ServerChoice` puts in use, checked
/// every `checkInterval` and chosen again when it stops fitting (a failover). Calls made while
/// no server fits, or cut off by the change, fail with `DatabaseServerUnavailable`, a transient
/// fault (`DatabaseFault.transient`): the callers' retries reach the new server.
public final class Database: Service, Sendable {
    public let configuration: DatabaseConfiguration
    private let servers: Servers

    private enum Servers {
        case one(PostgresClient)
        case several(ServerChooser)
    }

    /// How often the server in use is checked, and all of them while none fits.
    static let checkInterval = Duration.milliseconds(500)

    init(configuration: DatabaseConfiguration, logger: Logger) {
        self.configuration = configuration
        servers = configuration.endpoints.count == 1
            ? .one(PostgresClient(configuration: configuration.clientConfiguration(configuration.endpoints[0]),
                                  backgroundLogger: logger))
            : .several(ServerChooser(configuration: configuration, logger: logger))
    }

    public func run() async {
        switch servers {
        case .one(let client): await client.run()
        case .several(let chooser): await cancelWhenGracefulShutdown { await chooser.run() }
        }
    }

    public func withConnection<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let (client, generation) = try await pool()
        do {
            return try await client.withConnection(isolation: isolation, closure)
        } catch {
            throw changed(error, since: generation)
        }
    }

    public func withTransaction<Result>(
        logger: Logger, file: String = #file, line: Int = #line,
        isolation: isolated (any Actor)? = #isolation,
        _ closure: (PostgresConnection) async throws -> sending Result
    ) async throws -> sending Result {
        let (client, generation) = try await pool()
        do {
            return try await client.withTransaction(logger: logger, file: file, line: line, isolation: isolation, closure)
        } catch {
            throw changed(error, since: generation)
        }
    }

    @discardableResult
    public func query(_ query: PostgresQuery, logger: Logger? = nil, file: String = #fileID, line: Int = #line)
        async throws -> PostgresRowSequence
    {
        let (client, generation) = try await pool()
        do {
            return try await client.query(query, logger: logger, file: file, line: line)
        } catch {
            throw changed(error, since: generation)
        }
    }

    public func execute<Statement: PostgresPreparedStatement, Row>(
        _ statement: Statement, logger: Logger? = nil, file: String = #fileID, line: Int = #line
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Row> where Row == Statement.Row {
        let (client, generation) = try await pool()
        do {
            return try await client.execute(statement, logger: logger, file: file, line: line)
        } catch {
            throw changed(error, since: generation)
        }
    }

    /// Runs `body`, failing it at once with `DatabaseServerUnavailable` (transient) when the server
    /// in use changes meanwhile (a failover): a statement in flight on a server that went away may
    /// never be answered, and whatever waits behind it would wait with it. `body` is then cancelled
    /// and left to end on its own; with a single server it simply runs.
    public func failingOnServerChange<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        guard case .several(let chooser) = servers else { return try await body() }
        let outcome = FirstOutcome<T>()
        let generation = chooser.generation
        let work = Task {
            do { outcome.resolve(.success(try await body())) } catch { outcome.resolve(.failure(error)) }
        }
        let unavailable = DatabaseServerUnavailable(servers: configuration.endpoints.map(\.description),
                                                    target: configuration.targetSession,
                                                    cause: "the server in use changed under the call")
        let watch = chooser.watch(from: generation) {
            if outcome.resolve(.failure(unavailable)) { work.cancel() }
        }
        defer { if let watch { chooser.unwatch(watch) } }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { outcome.wait($0) }
        } onCancel: {
            work.cancel()
        }
    }

    private func pool() async throws -> (PostgresClient, Int) {
        switch servers {
        case .one(let client): (client, 0)
        case .several(let chooser): try await chooser.pool()
        }
    }

    /// A call cut off because its server was dropped meanwhile is a transient fault whatever
    /// its pool said (a closed pool is otherwise the process stopping).
    private func changed(_ error: any Error, since generation: Int) -> any Error {
        guard case .several(let chooser) = servers, chooser.generation != generation, !(error is CancellationError)
        else { return error }
        return DatabaseServerUnavailable(servers: configuration.endpoints.map(\.description),
                                         target: configuration.targetSession, cause: ErrorText.describe(error))
    }
}
