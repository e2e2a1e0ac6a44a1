import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import ServiceLifecycle

/// The thin loop around `ServerChoice`: checks the servers, and opens and closes the pool of
/// the one in use.
final class ServerChooser: Sendable {
    private struct State {
        var choice: ServerChoice
        var client: PostgresClient?
        var clientRun: Task<Void, Never>?
        /// Counts the servers put in use and dropped: a call that fails after it changed was cut off.
        var generation = 0
        var waiting: [CheckedContinuation<(PostgresClient, Int), any Error>] = []
        var stopped = false
        /// Called once when the generation changes (`watch`), by key.
        var watchers: [Int: @Sendable () -> Void] = [:]
        var nextWatcher = 0

        /// The generation moves on: the watchers to call, outside the lock.
        mutating func advance() -> [@Sendable () -> Void] {
            generation += 1
            defer { watchers = [:] }
            return Array(watchers.values)
        }
    }

    private let configuration: DatabaseConfiguration
    private let logger: Logger
    private let state: NIOLockedValueBox<State>

    init(configuration: DatabaseConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        state = NIOLockedValueBox(State(choice: ServerChoice(target: configuration.targetSession)))
    }

    var generation: Int { state.withLockedValue { $0.generation } }

    /// Calls `handler` once the server in use changes after `generation` (at once when it has);
    /// nil when it was called at once, else the key to `unwatch` with.
    func watch(from generation: Int, _ handler: @escaping @Sendable () -> Void) -> Int? {
        let key = state.withLockedValue { state -> Int? in
            guard state.generation == generation, !state.stopped else { return nil }
            state.nextWatcher += 1
            state.watchers[state.nextWatcher] = handler
            return state.nextWatcher
        }
        if key == nil { handler() }
        return key
    }

    func unwatch(_ key: Int) {
        _ = state.withLockedValue { $0.watchers.removeValue(forKey: key) }
    }

    func pool() async throws -> (PostgresClient, Int) {
        try await withCheckedThrowingContinuation { continuation in
            let result: Result<(PostgresClient, Int), any Error>? = state.withLockedValue { state in
                if state.stopped { return .failure(CancellationError()) }
                switch state.choice.state {
                case .using:
                    if let client = state.client { return .success((client, state.generation)) }
                    // Chosen a moment ago; its pool is being put in place.
                    state.waiting.append(continuation)
                    return nil
                case .none:
                    return .failure(unavailable(nil))
                case .starting:
                    state.waiting.append(continuation)
                    return nil
                }
            }
            if let result { continuation.resume(with: result) }
        }
    }

    func run() async {
        var monitor: PostgresConnection?
        while !Task.isCancelled {
            let using: Int? = state.withLockedValue { state in
                if case .using(let server) = state.choice.state { return server }
                return nil
            }
            if let server = using {
                let found = await check(server, keeping: &monitor)
                let action = state.withLockedValue { $0.choice.checked(found) }
                if case .drop = action {
                    try? await monitor?.close()
                    monitor = nil
                    await carryOut(action)
                    continue
                }
            } else {
                var found: [ServerChoice.Found] = []
                // In the URL's order, up to the first that fits (kept open to check it from now on).
                for server in configuration.endpoints.indices {
                    var connection: PostgresConnection?
                    found.append(await check(server, keeping: &connection))
                    if found[server].fits(configuration.targetSession) {
                        monitor = connection
                        break
                    }
                    try? await connection?.close()
                }
                await carryOut(state.withLockedValue { $0.choice.checkedAll(found) })
            }
            try? await Task.sleep(for: Database.checkInterval)
        }
        try? await monitor?.close()
        let (run, waiting) = state.withLockedValue { state in
            state.stopped = true
            defer { state.waiting = [] }
            return (state.clientRun, state.waiting)
        }
        for continuation in waiting { continuation.resume(throwing: CancellationError()) }
        run?.cancel()
        await run?.value
    }

    private func carryOut(_ action: ServerChoice.Action) async {
        switch action {
        case .none:
            break
        case .use(let server):
            let endpoint = configuration.endpoints[server]
            let client = PostgresClient(configuration: configuration.clientConfiguration(endpoint), backgroundLogger: logger)
            let run = Task { await client.run() }
            let (waiting, generation, watchers) = state.withLockedValue { state in
                let watchers = state.advance()
                state.client = client
                state.clientRun = run
                defer { state.waiting = [] }
                return (state.waiting, state.generation, watchers)
            }
            for watcher in watchers { watcher() }
            logger.notice("database server in use", metadata: [
                "server": "\(endpoint)", "target_session_attrs": "\(configuration.targetSession.rawValue)",
            ])
            for continuation in waiting { continuation.resume(returning: (client, generation)) }
        case .drop(let server):
            let (run, watchers) = state.withLockedValue { state in
                defer {
                    state.client = nil
                    state.clientRun = nil
                }
                return (state.clientRun, state.advance())
            }
            // Calls in flight on it fail at once (`Database.failingOnServerChange`).
            for watcher in watchers { watcher() }
            logger.warning("database server no longer fits; choosing again", metadata: [
                "server": "\(configuration.endpoints[server])",
                "target_session_attrs": "\(configuration.targetSession.rawValue)",
            ])
            // Closing its pool fails the calls waiting for it at once (they retry on the next).
            run?.cancel()
            await run?.value
        case .failWaiting:
            let waiting = state.withLockedValue { state in
                defer { state.waiting = [] }
                return state.waiting
            }
            if !waiting.isEmpty {
                logger.warning("no database server fits", metadata: [
                    "servers": "\(configuration.endpoints.map(\.description).joined(separator: ","))",
                    "target_session_attrs": "\(configuration.targetSession.rawValue)",
                ])
            }
            for continuation in waiting { continuation.resume(throwing: unavailable(nil)) }
        }
    }

    /// What one server is now, on `connection` (opened when nil, closed and cleared on failure).
    private func check(_ server: Int, keeping connection: inout PostgresConnection?) async -> ServerChoice.Found {
        do {
            if connection == nil {
                connection = try await PostgresConnection.connect(
                    on: PostgresConnection.defaultEventLoopGroup.any(),
                    configuration: configuration.connectionConfiguration(configuration.endpoints[server]),
                    id: server, logger: logger)
            }
            guard let open = connection else { return .unreachable }
            let logger = self.logger
            return try await DatabaseRetry.withDeadline(.seconds(3), what: "checking a database server") {
                var found = ServerChoice.Found.unreachable
                let rows = try await open.query(
                    "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'", logger: logger)
                for try await (recovery, readOnly) in rows.decode((Bool, Bool).self) {
                    found = .init(reachable: true, inRecovery: recovery, readOnly: readOnly)
                }
                return found
            }
        } catch {
            try? await connection?.close()
            connection = nil
            return .unreachable
        }
    }

    private func unavailable(_ cause: String?) -> DatabaseServerUnavailable {
        DatabaseServerUnavailable(servers: configuration.endpoints.map(\.description),
                                  target: configuration.targetSession, cause: cause)
    }
}
