import APNs
import Lifecycle
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ServiceLifecycle
import Store
import UnixSignals
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The lifecycle of a command that does one job and ends (`herald run`,
/// `herald send-test`), the same as `herald serve`'s: a `ServiceGroup` of the
/// database pool and the job. SIGTERM or SIGINT shuts the group down
/// gracefully: the job is asked to stop through `stop` (no new claims, what
/// is in flight finishes within its grace, every outcome is recorded), then
/// the pool closes. A second signal exits at once with `tempFail`
/// (leases expire; the next run continues).
public enum JobLifecycle {
    /// EX_TEMPFAIL: stopped with work left (a signal, an outage); the next run continues.
    public static let tempFail: Int32 = 75

    public static func run<T: Sendable>(
        database: DatabaseConfiguration, stop: StopSignal, logger: Logger,
        _ job: @escaping @Sendable (Database) async throws -> T
    ) async throws -> T {
        let client = database.makeClient(logger: logger)
        let service = JobService(stop: stop, logger: logger) { try await job(client) }
        let group = ServiceGroup(configuration: .init(
            services: [
                .init(service: client),
                .init(service: service, successTerminationBehavior: .gracefullyShutdownGroup,
                      failureTerminationBehavior: .gracefullyShutdownGroup),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await exitOnSecondSignal(logger: logger) }
            try await group.run()
            tasks.cancelAll()
        }
        return try service.result()
    }

    /// Runs `body` beside the APNs client, both services of one group: the
    /// client starts first and is shut down after `body` has ended, so what
    /// `body` sends is never cut short by the client going away. A graceful
    /// shutdown of the enclosing group reaches `body` through `stop`.
    static func withAPNsClient<T: Sendable>(_ client: APNsClient, stop: StopSignal, logger: Logger,
                                            _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let job = JobService(stop: stop, logger: logger, job: body)
        let group = ServiceGroup(configuration: .init(
            services: [
                .init(service: ClientService(client: client)),
                .init(service: job, successTerminationBehavior: .gracefullyShutdownGroup,
                      failureTerminationBehavior: .gracefullyShutdownGroup),
            ],
            logger: logger))
        try await group.run()
        return try job.result()
    }

    /// Counts SIGTERM and SIGINT beside the service group: the first is the
    /// group's graceful shutdown, the second ends the process. (A group's
    /// `cancellationSignals` may not repeat its graceful ones, so the group
    /// cannot tell a second SIGTERM from the first.)
    private static func exitOnSecondSignal(logger: Logger) async {
        var seen = 0
        for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) {
            seen += 1
            if seen == 1 {
                logger.notice("stop requested: no new claims, finishing what is in flight")
            } else {
                logger.warning("second stop signal; exiting at once")
                exit(tempFail)
            }
        }
    }
}

/// The APNs client as a service of a job's group. When a stop's grace runs
/// out, the engine shuts the client down while the job still records what
/// it has: the service then waits for the group to end it, so that the group
/// sees its services end in order.
struct ClientService: Service {
    let client: APNsClient

    func run() async throws {
        try await client.run()
        try? await gracefulShutdown()
    }
}

/// One job as a service: it runs once; a graceful shutdown of its group
/// asks it to stop through the stop signal. Its result (or error) is kept
/// for the command, so that the group itself ends cleanly either way.
final class JobService<T: Sendable>: Service, Sendable {
    private let stop: StopSignal
    private let logger: Logger
    private let job: @Sendable () async throws -> T
    private let outcome = NIOLockedValueBox<Result<T, any Error>?>(nil)

    init(stop: StopSignal, logger: Logger, job: @escaping @Sendable () async throws -> T) {
        self.stop = stop
        self.logger = logger
        self.job = job
    }

    func run() async {
        let result: Result<T, any Error>
        do {
            result = .success(try await stop.whileRunning { try await job() })
        } catch {
            result = .failure(error)
        }
        outcome.withLockedValue { $0 = result }
    }

    func result() throws -> T {
        guard let result = outcome.withLockedValue({ $0 }) else {
            throw CancellationError()
        }
        return try result.get()
    }
}
