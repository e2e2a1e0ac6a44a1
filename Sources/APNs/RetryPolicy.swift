import Foundation

/// How failed attempts are retried: exponential backoff with full jitter.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first one included.
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration

    public init(maxAttempts: Int = 5, baseDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(5)) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The delay before attempt number `attempt + 1`, after `attempt` failed attempts (1-based):
    /// uniformly random in `0 ... min(maxDelay, baseDelay * 2^(attempt-1))`.
    func delay<G: RandomNumberGenerator>(afterAttempt attempt: Int, using generator: inout G) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(self.maxDelay, self.baseDelay * (1 << exponent))
        let ceilingNanos = ceiling.components.seconds * 1_000_000_000 + ceiling.components.attoseconds / 1_000_000_000
        guard ceilingNanos > 0 else { return .zero }
        return .nanoseconds(Int64.random(in: 0...ceilingNanos, using: &generator))
    }
}
