/// The time Herald goes by: the system's continuous clock in a process, a
/// test's clock in tests (moved on by hand, its waits take no real time).
/// Every reading of the time and every timed wait of a run goes through the
/// one clock its options carry (`RunOptions.clock`).
public protocol HeraldClock: Clock where Instant == ContinuousClock.Instant {}

extension ContinuousClock: HeraldClock {}

extension HeraldClock {
    /// Returns at `deadline` or later; throws when the task is cancelled.
    public func sleep(until deadline: Instant) async throws {
        try await sleep(until: deadline, tolerance: nil)
    }
}

extension HeraldClock where Self == ContinuousClock {
    /// The system's clock: the one place Herald makes one.
    public static var system: ContinuousClock { ContinuousClock() }
}
