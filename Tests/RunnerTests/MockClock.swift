import NIOConcurrencyHelpers
@testable import Runner

/// A run's clock that a test moves on by hand: sleepers wake when it passes
/// their deadline, so the engine's waits take no real time.
final class MockClock: RunClock {
    private struct Sleeper {
        var id: Int
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: ContinuousClock.Instant
        var sleepers: [Sleeper] = []
        var nextID = 0
    }

    private let state: NIOLockedValueBox<State>
    let start: ContinuousClock.Instant

    init(start: ContinuousClock.Instant = ContinuousClock().now) {
        self.start = start
        self.state = NIOLockedValueBox(State(now: start))
    }

    var now: ContinuousClock.Instant { state.withLockedValue { $0.now } }

    /// Time passed on this clock since it was made.
    var elapsed: Duration { now - start }

    func sleep(until deadline: ContinuousClock.Instant) async throws {
        let id = state.withLockedValue { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = state.withLockedValue { s -> Bool in
                    if deadline <= s.now { return true }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLockedValue { s -> Sleeper? in
                guard let i = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: i)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The earliest deadline anyone sleeps until.
    var nextDeadline: ContinuousClock.Instant? { state.withLockedValue { $0.sleepers.map(\.deadline).min() } }

    /// Moves the clock to `instant` and wakes everyone due by then.
    func advance(to instant: ContinuousClock.Instant) {
        let due = state.withLockedValue { s -> [Sleeper] in
            s.now = max(s.now, instant)
            let due = s.sleepers.filter { $0.deadline <= s.now }
            s.sleepers.removeAll { $0.deadline <= s.now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Runs `body` while moving the clock on to each next deadline as soon as
    /// someone sleeps: `body`'s waits pass at once, in order.
    func driving<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await body() }
        let driver = Task {
            while !Task.isCancelled {
                if let next = nextDeadline {
                    advance(to: next)
                } else {
                    try? await Task.sleep(for: .microseconds(200))
                }
                await Task.yield()
            }
        }
        defer { driver.cancel() }
        return try await task.value
    }
}
