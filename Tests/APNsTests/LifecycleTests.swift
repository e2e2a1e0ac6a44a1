import APNs
import APNsSimulator
import Logging
import NIOPosix
import ServiceLifecycle
import Testing
import TestSupport

@Suite("Client and simulator as services")
struct LifecycleTests {
    @Test("graceful shutdown of the service group lets sent notifications finish, refuses new ones, then stops client and simulator")
    func gracefulShutdown() async throws {
        let running = try await APNsSimulatorHarness.start { configuration in
            configuration.faults.latency = .milliseconds(200)
        }
        var logger = Logger(label: "apns-test")
        logger.logLevel = .warning
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let client = try APNsClient(configuration: running.clientConfiguration, eventLoopGroup: group, logger: logger)
        let services = ServiceGroup(
            configuration: .init(services: [running.simulator, client], logger: logger)
        )
        let notifications = (0..<20).map { notification($0) }
        let results = try await withThrowingTaskGroup(of: [APNsResult].self) { tasks in
            tasks.addTask {
                try await services.run()
                return []
            }
            #expect(await client.send(notification(100)).outcome.isSent)
            let results = await withTaskGroup(of: APNsResult.self) { senders in
                // Tasks on the client's event loop start in the order they are made: every
                // notification is handed to the connection before the shutdown begins.
                for item in notifications {
                    senders.addTask(executorPreference: client.taskExecutor) { await client.send(item) }
                }
                senders.addTask(executorPreference: client.taskExecutor) {
                    await services.triggerGracefulShutdown()
                    return APNsResult(outcome: .sent(apnsID: notification(0).apnsID), attempts: -1, retried: 0)
                }
                var results: [APNsResult] = []
                for await result in senders where result.attempts >= 0 { results.append(result) }
                return results
            }
            try await tasks.waitForAll()  // the group stopped: both services returned
            return results
        }
        #expect(results.count == 20)
        #expect(results.allSatisfy { $0.outcome.isSent })
        #expect(await client.send(notification(200)).outcome == .failed(status: nil, reason: .clientShutdown))
        // Stopped, the simulator still answers what it accepted: each notification once.
        let accepted = await running.simulator.accepted
        #expect(accepted.count == 21)
        #expect(Set(accepted.map(\.apnsID)).count == 21)
        await running.stop()
        try await group.shutdownGracefully()
    }

    @Test("cancelling the service fails what is in flight with clientShutdown at once")
    func cancellation() async throws {
        let running = try await APNsSimulatorHarness.start { configuration in
            configuration.faults.latency = .seconds(5)
        }
        var logger = Logger(label: "apns-test")
        logger.logLevel = .critical
        let client = try APNsClient(configuration: running.clientConfiguration, logger: logger)
        let runner = Task { try await client.run() }
        let sender = Task(executorPreference: client.taskExecutor) { await client.send(notification(1)).outcome }
        // The request is handed over before the cancellation: the sender runs on the loop first.
        let cancel = Task(executorPreference: client.taskExecutor) { runner.cancel() }
        await cancel.value
        let outcome = await sender.value
        try await runner.value
        #expect(outcome == .failed(status: nil, reason: .clientShutdown))
        await running.stop()
    }
}
