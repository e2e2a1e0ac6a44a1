/// The time a run goes by: the system's continuous clock, or one a test
/// moves on by hand (the engine's waits then take no real time).
protocol RunClock: Sendable {
    var now: ContinuousClock.Instant { get }
    /// Returns at `deadline` or later; throws when the task is cancelled.
    func sleep(until deadline: ContinuousClock.Instant) async throws
}

struct SystemClock: RunClock {
    var now: ContinuousClock.Instant { .now }

    func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await Task.sleep(until: deadline, clock: .continuous)
    }
}
