import APNs
import APNsSimulator
import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Store
import TestSupport
import Testing

@Suite("Transient faults are never permanent", .serialized)
struct FaultHandlingTests {
    @Test func serviceUnavailableEverywhereLeavesDeliveriesQueuedNotFailed() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 60))
            try await client.exec(Fixtures.campaign(name: "Storm"))
            try await withSimulator(customize: { c in
                c.faults = .init(rate429: 0, rate500: 0, rate503: 1.0, seed: 7)
            }) { sim in
                var apns = sim.clientConfiguration
                apns.retry = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5))
                let summary = try await sendRun(client, apns: apns, options: RunOptions(
                    topic: apns.topic, concurrency: 20, retryWait: .zero))
                #expect(summary.figures.failed == 0)
                #expect(summary.figures.sent == 0)
                #expect(summary.interruption == nil)
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'failed'", as: Int64.self) == 0)
                // Back in the queue with their attempts, last error and a backoff.
                #expect(try await client.scalar("""
                    SELECT count(*) FROM delivery_status
                    WHERE status = 'queued' AND attempts >= 1 AND last_error IS NOT NULL
                      AND not_before >= updated_at + interval '1 second' AND claimed_by IS NULL AND lease_expires_at IS NULL
                    """, as: Int64.self) == 60)
                // (Which transient answer each got last varies with the machine's load:
                // a 503, or the client's own deadline. Either way it is back in the queue.)
                #expect(try await client.scalar("SELECT status FROM campaigns", as: String.self) == "running")
            }
        }
    }

    @Test func anUnreachableAPNsOpensTheBreakerAndStopsTheRunWithWorkLeft() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 300))
            try await client.exec(Fixtures.campaign(name: "Dark"))
            try await withSimulator { sim in
                var apns = sim.clientConfiguration
                // Nothing listens there.
                await sim.simulator.shutdown()
                apns.retry = RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5))
                apns.connectTimeout = .seconds(1)
                let summary = try await sendRun(client, apns: apns, options: RunOptions(
                    topic: apns.topic, batchSize: 100, concurrency: 10, outageBudget: .seconds(2)))
                guard case .outage(let why)? = summary.interruption else {
                    Issue.record("expected an outage, got \(String(describing: summary.interruption))")
                    return
                }
                #expect(why.contains("unreachable"))
                #expect(summary.exitStatus == 75)
                #expect(summary.figures.failed == 0)
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'queued'", as: Int64.self) == 300)
                #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE status <> 'queued'", as: Int64.self) == 0)
                // Only a few went out before the breaker opened; the rest were given back untouched.
                let tried = try await client.scalar("SELECT count(*) FROM delivery_status WHERE attempts > 0", as: Int64.self) ?? 0
                #expect(tried < 100)
                #expect(try await client.scalar("SELECT status FROM runs", as: String.self) == "stopped")
            }
        }
    }
}
