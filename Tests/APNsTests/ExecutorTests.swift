import APNs
import APNsSimulator
import Foundation
import Logging
import Testing
import TestSupport

@Suite("Executor")
struct ExecutorTests {
    @Test("tasks that prefer the client's executor send on its event loop")
    func sendOnClientExecutor() async throws {
        let running = try await APNsSimulatorHarness.start()
        let notifications = (0..<300).map { notification($0) }
        let results = try await withClient(running) { client in
            await withTaskExecutorPreference(client.taskExecutor) {
                await sendAll(client, notifications, concurrency: 50)
            }
        }
        #expect(results.allSatisfy { $0.outcome.isSent })
        #expect(Set(await running.simulator.accepted.map(\.apnsID)).count == 300)
    }
}
