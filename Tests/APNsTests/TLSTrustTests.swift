import APNs
import APNsSimulator
import Foundation
import Logging
import Testing
import TestSupport

@Suite("TLS trust")
struct TLSTrustTests {
    @Test("the simulator's CA must be trusted; its name is verified through SNI")
    func trust() async throws {
        let running = try await APNsSimulatorHarness.start()
        let port = try #require(running.clientConfiguration.baseURLOverride?.split(separator: ":").last.map(String.init))
        let byName = try await withClient(
            running,
            configure: { $0.baseURLOverride = "https://localhost:\(port)" }
        ) { client in
            await client.send(notification(1))
        }
        #expect(byName.outcome.isSent)

        let untrusted = try await APNsSimulatorHarness.start()
        let withoutCA = try await withClient(
            untrusted,
            configure: { configuration in
                configuration.extraTrustedCAPath = nil
                configuration.retry = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5))
            }
        ) { client in
            await client.send(notification(2))
        }
        #expect(withoutCA.outcome == .failed(status: nil, reason: .connectionFailed))
        #expect(await untrusted.simulator.stats.requests == 0)
    }
}
