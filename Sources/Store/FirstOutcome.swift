import Lifecycle
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import PostgresNIO

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
