import NIOConcurrencyHelpers
import ServiceLifecycle

/// How a long-lived part of Herald is asked to stop: the one stop type of
/// every command (a run, the APNs client, the simulator, a test send).
///
/// `request` raises the level (never lowers it) and wakes whoever waits for
/// that level or less; a part that polls between steps reads `isRequested`
/// and `requestedAt` (when the grace period began).
public final class StopSignal: Sendable {
    public enum Level: Int, Comparable, Sendable {
        case running = 0
        /// Finish what is under way, take nothing new.
        case graceful = 1
        /// Stop now.
        case immediate = 2

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    private struct State {
        var level = Level.running
        var requestedAt: ContinuousClock.Instant?
        var waiters: [(level: Level, continuation: CheckedContinuation<Level, Never>)] = []
    }

    private let state = NIOLockedValueBox(State())
    /// What `requestedAt` is read from: the clock of the run it stops.
    private let clock: any HeraldClock

    public init(clock: any HeraldClock = .system) {
        self.clock = clock
    }

    public var level: Level { state.withLockedValue { $0.level } }

    /// True once any stop was asked for.
    public var isRequested: Bool { level > .running }

    /// When the first stop was asked for: a graceful stop's grace counts from here.
    public var requestedAt: ContinuousClock.Instant? { state.withLockedValue { $0.requestedAt } }

    /// Raises the level to `level`; returns false when it was that high already.
    @discardableResult
    public func request(_ level: Level = .graceful) -> Bool {
        let (raised, woken) = state.withLockedValue { state -> (Bool, [CheckedContinuation<Level, Never>]) in
            guard level > state.level else { return (false, []) }
            state.level = level
            if state.requestedAt == nil { state.requestedAt = clock.now }
            var woken: [CheckedContinuation<Level, Never>] = []
            state.waiters.removeAll { waiter in
                guard waiter.level <= level else { return false }
                woken.append(waiter.continuation)
                return true
            }
            return (true, woken)
        }
        for continuation in woken { continuation.resume(returning: level) }
        return raised
    }

    /// Returns once the level is at least `level` (at once when it is already).
    public func wait(for level: Level) async -> Level {
        await withCheckedContinuation { continuation in
            let current = state.withLockedValue { state -> Level? in
                if state.level >= level { return state.level }
                state.waiters.append((level, continuation))
                return nil
            }
            if let current { continuation.resume(returning: current) }
        }
    }

    /// What a service's `run()` waits on: a graceful shutdown of its group
    /// asks for `.graceful`, cancelling its task for `.immediate`. Returns
    /// the level asked for first.
    public func untilShutdown() async -> Level {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await wait(for: .graceful)
            } onGracefulShutdown: {
                self.request(.graceful)
            }
        } onCancel: {
            self.request(.immediate)
        }
    }

    /// Runs `body` with this signal raised to `.graceful` when the
    /// surrounding service group shuts down gracefully, and to `.immediate`
    /// when the task is cancelled.
    public func whileRunning<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        try await withTaskCancellationHandler {
            try await withGracefulShutdownHandler {
                try await body()
            } onGracefulShutdown: {
                self.request(.graceful)
            }
        } onCancel: {
            self.request(.immediate)
        }
    }
}
