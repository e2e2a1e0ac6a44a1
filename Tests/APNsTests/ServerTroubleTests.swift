import APNs
import APNsSimulator
import Foundation
import Logging
import Testing
import TestSupport

@Suite("Misbehaving and unreachable servers")
struct ServerTroubleTests {
    @Test("a server that answers before reading the body (then RST_STREAM NO_ERROR) does not hang the client")
    func answerBeforeBody() async throws {
        let running = try await APNsSimulatorHarness.start { configuration in
            configuration.faults.answerBeforeBody = true
        }
        let notifications = (0..<60).map { notification($0) }
        let results = try await withClient(running) { client in
            await sendAll(client, notifications, concurrency: 10)
        }
        #expect(results.count == 60)
        #expect(results.allSatisfy { $0.outcome.isSent && $0.attempts == 1 })
    }

    @Test("an unreachable server gives connectionFailed once the attempts are used up")
    func unreachable() async throws {
        let running = try await APNsSimulatorHarness.start()
        await running.simulator.shutdown()  // nothing listens on that port any more
        let result = try await withClient(
            running,
            configure: { $0.retry = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5)) }
        ) { client in
            await client.send(notification(1))
        }
        #expect(result.outcome == .failed(status: nil, reason: .connectionFailed))
        #expect(result.attempts == 3)
    }

    @Test("sending after shutdown fails fast with clientShutdown")
    func afterShutdown() async throws {
        let running = try await APNsSimulatorHarness.start()
        var logger = Logger(label: "apns-test")
        logger.logLevel = .warning
        let client = try APNsClient(configuration: running.clientConfiguration, logger: logger)
        #expect(await client.send(notification(1)).outcome.isSent)
        await client.shutdown()
        #expect(await client.send(notification(2)).outcome == .failed(status: nil, reason: .clientShutdown))
        await running.stop()
    }
}
