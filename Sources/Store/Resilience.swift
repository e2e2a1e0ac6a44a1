import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// What a failed database call says about the database, the run and the campaign.
public enum DatabaseFault {
    /// SQLSTATEs of a server that is going away, coming back, failing over
    /// or shedding load, and of statements that were fine but lost a race:
    /// worth the same statement again a little later.
    static let transientStates: Set<String> = [
        "57P01",  // admin_shutdown (a restart, a failover)
        "57P02",  // crash_shutdown
        "57P03",  // cannot_connect_now (starting up, recovering)
        "57P05",  // idle_session_timeout
        "40001",  // serialization_failure
        "40P01",  // deadlock_detected
        "57014",  // query_canceled (statement_timeout)
        "25006",  // read_only_sql_transaction (a standby after failover)
        "53300",  // too_many_connections
        "55P03",  // lock_not_available
    ]

    /// SQLSTATE classes a campaign's own data can cause: a bad value, a
    /// violated constraint, a rule compiled to SQL the server refuses, a
    /// trigger's RAISE.
    static let campaignDataClasses: Set<String> = ["22", "23", "42", "P0", "2F", "39"]

    /// A lost or refused connection, a server restarting or failing over,
    /// a deadlock, a serialization failure or a statement timeout.
    public static func isTransient(_ error: any Error) -> Bool {
        if isOutOfReach(error) { return true }
        guard let psql = error as? PSQLError else {
            // Sockets that could not connect or broke (NIO's own errors).
            return !(error is PostgresDecodingError) && !(error is DecodingError) && !(error is StoreError)
                && !(error is CancellationError)
        }
        if let state = psql.serverInfo?[.sqlState] {
            return transientStates.contains(state) || state.hasPrefix("08") || state.hasPrefix("53")
        }
        switch psql.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .queryCancelled,
             .sslUnsupported, .failedToAddSSLHandler:
            return true
        default:
            return false
        }
    }

    /// Herald's own errors for a database it cannot reach now: a call past its deadline, or no
    /// server of the URL that fits (a failover under way).
    public static func isOutOfReach(_ error: any Error) -> Bool {
        error is DatabaseCallTimedOut || error is DatabaseServerUnavailable
    }

    /// An error caused by one campaign's data (a constraint, an unreadable
    /// rule or column): it fails that campaign, never the run.
    public static func isCampaignData(_ error: any Error) -> Bool {
        if error is PostgresDecodingError || error is DecodingError { return true }
        guard let state = StoreError.sqlState(of: error) else { return false }
        return campaignDataClasses.contains(String(state.prefix(2)))
    }
}

/// One database call took longer than its deadline (a server that stopped
/// answering, a pool waiting for a server that is down).
public struct DatabaseCallTimedOut: Error, CustomStringConvertible {
    public let what: String
    public var description: String { "\(what): the database did not answer in time" }
}

/// The database stayed unreachable (or kept refusing with transient errors)
/// for longer than the run's budget. The run stops; the next one continues.
public struct DatabaseUnavailable: Error, CustomStringConvertible {
    public let what: String
    public let cause: String
    public let budget: Duration
    public var description: String {
        "the database was unavailable for more than \(budget.components.seconds) s (\(what): \(cause))"
    }
}

/// Retries database calls through transient faults (a restart, a failover,
/// a deadlock, a statement timeout) with backoff, for at most `budget` per
/// call; each try has its own deadline.
public struct DatabaseRetry: Sendable {
    public var budget: Duration
    public var attemptTimeout: Duration
    public var logger: Logger

    public init(budget: Duration = .seconds(120), attemptTimeout: Duration = .seconds(60), logger: Logger) {
        self.budget = budget
        self.attemptTimeout = attemptTimeout
        self.logger = logger
    }

    public func callAsFunction<T: Sendable>(_ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let clock = ContinuousClock()
        let start = clock.now
        var delay = Duration.milliseconds(200)
        var warned = false
        while true {
            do {
                let result = try await Self.withDeadline(attemptTimeout, what: what, body)
                if warned { logger.notice("the database answers again", metadata: ["call": "\(what)"]) }
                return result
            } catch where DatabaseFault.isTransient(error) && !Task.isCancelled {
                let elapsed = clock.now - start
                guard elapsed + delay <= budget else {
                    throw DatabaseUnavailable(what: what, cause: StoreError.describe(error), budget: budget)
                }
                if !warned {
                    logger.warning("database call failed; retrying", metadata: [
                        "call": "\(what)", "error": "\(StoreError.describe(error))",
                    ])
                    warned = true
                }
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Runs `body`, throwing `DatabaseCallTimedOut` when it takes longer
    /// than `timeout`. The caller gets its answer at the deadline even when
    /// `body` does not honour cancellation (a connection that never
    /// answers): `body` is then cancelled and left to end on its own.
    public static func withDeadline<T: Sendable>(_ timeout: Duration, what: String,
                                                 _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = FirstOutcome<T>()
        let work = Task {
            do { outcome.resolve(.success(try await body())) } catch { outcome.resolve(.failure(error)) }
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if outcome.resolve(.failure(DatabaseCallTimedOut(what: what))) { work.cancel() }
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { outcome.wait($0) }
        } onCancel: {
            work.cancel()
        }
    }
}

/// The first of several results, handed to one waiting continuation.
final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var result: Result<T, any Error>?
        var waiter: CheckedContinuation<T, any Error>?
        var delivered = false
    }

    private let state = NIOLockedValueBox(State())

    /// Records `result` unless one came first; true when it was the first.
    @discardableResult
    func resolve(_ result: Result<T, any Error>) -> Bool {
        let (first, waiter) = state.withLockedValue { s -> (Bool, CheckedContinuation<T, any Error>?) in
            guard s.result == nil else { return (false, nil) }
            s.result = result
            guard let w = s.waiter, !s.delivered else { return (true, nil) }
            s.delivered = true
            return (true, w)
        }
        waiter?.resume(with: result)
        return first
    }

    func wait(_ continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLockedValue { s -> Result<T, any Error>? in
            guard let r = s.result else {
                s.waiter = continuation
                return nil
            }
            s.delivered = true
            return r
        }
        if let ready { continuation.resume(with: ready) }
    }
}
