import NIOConcurrencyHelpers
import ServiceLifecycle

/// How a long-lived part is asked to stop, for services that wait without polling: `request`
/// raises the level (never lowers it) and wakes whoever waits for that level or less.
package final class StopSignal: Sendable {
    package enum Level: Int, Comparable, Sendable {
        case running = 0
        /// Finish what is under way, take nothing new.
        case graceful = 1
        /// Stop now.
        case immediate = 2

        package static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    private struct State {
        var level = Level.running
        var waiters: [(level: Level, continuation: CheckedContinuation<Level, Never>)] = []
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    package var level: Level { state.withLockedValue { $0.level } }

    package func request(_ level: Level) {
        let woken = state.withLockedValue { state -> [CheckedContinuation<Level, Never>] in
            guard level > state.level else { return [] }
            state.level = level
            var woken: [CheckedContinuation<Level, Never>] = []
            state.waiters.removeAll { waiter in
                guard waiter.level <= level else { return false }
                woken.append(waiter.continuation)
                return true
            }
            return woken
        }
        for continuation in woken { continuation.resume(returning: level) }
    }

    /// Returns once the level is at least `level` (at once when it is already).
    package func wait(for level: Level) async -> Level {
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
    package func untilShutdown() async -> Level {
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
}
