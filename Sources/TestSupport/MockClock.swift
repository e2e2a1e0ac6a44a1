import Lifecycle
import NIOConcurrencyHelpers

/// A clock a test moves on by hand, a real `Clock` (as postgres-nio's
/// `MockClock` is): sleepers wake when it passes their deadline, so the
/// waits of what runs on it take no real time; `nextTimerScheduled()` answers
/// once someone sleeps, so nothing polls it.
public final class MockClock: HeraldClock, Sendable {
    public typealias Instant = ContinuousClock.Instant

    private struct Sleeper {
        var id: Int
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Instant
        var sleepers: [Sleeper] = []
        var nextID = 0
        /// Waiting in `nextTimerScheduled()` for a sleeper, by id.
        var watchers: [Int: CheckedContinuation<Instant, Never>] = [:]
        /// Watchers whose task was cancelled before they waited.
        var cancelledWatchers: Set<Int> = []
    }

    private let state: NIOLockedValueBox<State>
    public let start: Instant

    public init(start: Instant = ContinuousClock.system.now) {
        self.start = start
        self.state = NIOLockedValueBox(State(now: start))
    }

    public var now: Instant { state.withLockedValue { $0.now } }

    public var minimumResolution: Duration { .zero }

    /// Time passed on this clock since it was made.
    public var elapsed: Duration { now - start }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLockedValue { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (ready, watchers) = state.withLockedValue { s -> (Bool, [CheckedContinuation<Instant, Never>]) in
                    if deadline <= s.now { return (true, []) }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    defer { s.watchers = [:] }
                    return (false, Array(s.watchers.values))
                }
                if ready { continuation.resume() }
                for watcher in watchers { watcher.resume(returning: deadline) }
            }
        } onCancel: {
            let sleeper = state.withLockedValue { s -> Sleeper? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: i)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The earliest deadline anyone sleeps until, once someone does (now, when the waiting
    /// task is cancelled).
    public func nextTimerScheduled() async -> Instant {
        let id = state.withLockedValue { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let earliest = state.withLockedValue { s -> Instant? in
                    if s.cancelledWatchers.remove(id) != nil { return s.now }
                    if let earliest = s.sleepers.map(\.deadline).min() { return earliest }
                    s.watchers[id] = continuation
                    return nil
                }
                if let earliest { continuation.resume(returning: earliest) }
            }
        } onCancel: {
            let (watcher, now) = state.withLockedValue { s -> (CheckedContinuation<Instant, Never>?, Instant) in
                guard let watcher = s.watchers.removeValue(forKey: id) else {
                    s.cancelledWatchers.insert(id)
                    return (nil, s.now)
                }
                return (watcher, s.now)
            }
            watcher?.resume(returning: now)
        }
    }

    /// Moves the clock to `instant` and wakes everyone due by then.
    public func advance(to instant: Instant) {
        let due = state.withLockedValue { s -> [Sleeper] in
            s.now = max(s.now, instant)
            let due = s.sleepers.filter { $0.deadline <= s.now }
            s.sleepers.removeAll { $0.deadline <= s.now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    public func advance(by duration: Duration) { advance(to: now + duration) }

    /// Runs `body` while moving the clock on to the earliest deadline each
    /// time someone sleeps, once the tasks that can run have run (yielding
    /// to them first): `body`'s waits pass at once, in order.
    public func driving<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await body() }
        let driver = Task {
            while !Task.isCancelled {
                _ = await nextTimerScheduled()
                for _ in 0..<Self.yields { await Task.yield() }
                if let earliest = state.withLockedValue({ $0.sleepers.map(\.deadline).min() }) { advance(to: earliest) }
            }
        }
        defer { driver.cancel() }
        return try await task.value
    }

    /// How often the driver yields before it moves the clock on: the other tasks' turns to
    /// sleep until an earlier deadline first.
    static let yields = 20
}
