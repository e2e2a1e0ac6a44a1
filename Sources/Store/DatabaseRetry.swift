import Lifecycle
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import PostgresNIO

/// Retries database calls through transient faults (a restart, a failover,
/// a deadlock, a statement timeout) with backoff, for at most `budget` per
/// call; each try has its own deadline.
public struct DatabaseRetry: Sendable {
    public var budget: Duration
    public var attemptTimeout: Duration
    public var logger: Logger
    /// What the budget and the backoff are measured on.
    public var clock: any HeraldClock

    public init(budget: Duration = .seconds(120), attemptTimeout: Duration = .seconds(60), logger: Logger,
                clock: any HeraldClock = .system) {
        self.budget = budget
        self.attemptTimeout = attemptTimeout
        self.logger = logger
        self.clock = clock
    }

    public func callAsFunction<T: Sendable>(_ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let start = clock.now
        var delay = Duration.milliseconds(200)
        var warned = false
        while true {
            do {
                let result = try await Self.withDeadline(attemptTimeout, what: what, clock: clock, body)
                if warned { logger.notice("the database answers again", metadata: ["call": "\(what)"]) }
                return result
            } catch where DatabaseFault(error) == .transient && !Task.isCancelled {
                let elapsed = clock.now - start
                guard elapsed + delay <= budget else {
                    throw DatabaseUnavailable(what: what, cause: ErrorText.describe(error), budget: budget)
                }
                if !warned {
                    logger.warning("database call failed; retrying", metadata: [
                        "call": "\(what)", "error": "\(ErrorText.describe(error))",
                    ])
                    warned = true
                }
                try await clock.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Runs `body`, throwing `DatabaseCallTimedOut` when it takes longer
    /// than `timeout`. The caller gets its answer at the deadline even when
    /// `body` does not honour cancellation (a connection that never
    /// answers): `body` is then cancelled and left to end on its own.
    public static func withDeadline<T: Sendable>(_ timeout: Duration, what: String, clock: any HeraldClock = .system,
                                                 _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = FirstOutcome<T>()
        let work = Task {
            do { outcome.resolve(.success(try await body())) } catch { outcome.resolve(.failure(error)) }
        }
        let timer = Task {
            try? await clock.sleep(for: timeout)
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
