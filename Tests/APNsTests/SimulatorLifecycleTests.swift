import APNs
import APNsSimulator
import Logging
import NIOPosix
import ServiceLifecycle
import Testing
import TestSupport

@Suite("Simulator as a service")
struct SimulatorLifecycleTests {
    @Test("graceful shutdown of the simulator answers the open streams (GOAWAY, then the client closes) before it stops")
    func gracefulShutdown() async throws {
        let running = try await APNsSimulatorHarness.start { configuration in
            configuration.faults.latency = .milliseconds(200)
        }
        var logger = Logger(label: "apns-test")
        logger.logLevel = .critical
        let services = ServiceGroup(configuration: .init(services: [running.simulator], logger: logger))
        let notifications = (0..<20).map { notification($0) }
        let results = try await withClient(running) { client in
            try await withThrowingTaskGroup(of: [APNsResult].self) { tasks in
                tasks.addTask {
                    try await services.run()
                    return []
                }
                #expect(await client.send(notification(100)).outcome.isSent)
                let results = await withTaskGroup(of: APNsResult?.self) { senders in
                    // On the client's loop in the order made: every request is written before
                    // the shutdown begins.
                    for item in notifications {
                        senders.addTask(executorPreference: client.taskExecutor) { await client.send(item) }
                    }
                    senders.addTask(executorPreference: client.taskExecutor) {
                        await services.triggerGracefulShutdown()
                        return nil
                    }
                    var results: [APNsResult] = []
                    for await result in senders { if let result { results.append(result) } }
                    return results
                }
                try await tasks.waitForAll()
                return results
            }
        }
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0.outcome.isSent && $0.attempts == 1 })
        let stats = await running.simulator.stats
        #expect(stats.accepted == 21)
        #expect(stats.connections == 1)
    }
}
