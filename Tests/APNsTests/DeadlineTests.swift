import APNs
import APNsSimulator
import Foundation
import Logging
import Testing
import TestSupport

@Suite("Deadlines and keep-alive")
struct DeadlineTests {
    @Test("an answer later than the request deadline gives timeout once the attempts are used up")
    func requestDeadline() async throws {
        let running = try await APNsSimulatorHarness.start { configuration in
            configuration.faults.latency = .seconds(3)
        }
        let result = try await withClient(
            running,
            configure: { configuration in
                configuration.requestTimeout = .milliseconds(200)
                configuration.retry = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5))
            }
        ) { client in
            await client.send(notification(1))
        }
        #expect(result.outcome == .failed(status: nil, reason: .timeout))
        #expect(result.attempts == 2)
    }

    @Test("an idle connection is kept alive with PING and reused")
    func pingKeepsConnection() async throws {
        let running = try await APNsSimulatorHarness.start()
        let results = try await withClient(
            running,
            // A PING unanswered for one interval closes the connection: a second is ample on a
            // loaded machine (50 ms was not, with the whole suite running beside it).
            configure: { $0.pingInterval = .seconds(1) }
        ) { client in
            let first = await client.send(notification(1))
            try? await Task.sleep(for: .milliseconds(2_500))
            let second = await client.send(notification(2))
            return [first, second]
        }
        #expect(results.allSatisfy { $0.outcome.isSent })
        let stats = await running.simulator.stats
        #expect(stats.connections == 1)
        #expect(stats.pingsReceived >= 1)
    }
}
