import APNs
import Foundation
import HeraldCore
@testable import Runner
import Store
import Testing

@Suite("The delivery policy: one classification, one backoff")
struct DeliveryPolicyTests {
    /// Every answer class, what the ledger records and what the run learns.
    static let table: [(APNsResult, DeliveryOutcome.Status, transport: Bool, fatal: Bool)] = [
        (APNsResult(outcome: .sent(apnsID: UUID()), attempts: 1, retried: 0), .sent, false, false),
        (APNsResult(outcome: .deviceInvalid(reason: .unregistered, timestamp: nil), attempts: 1, retried: 0), .invalid, false, false),
        (APNsResult(outcome: .failed(status: 400, reason: .badCollapseID), attempts: 1, retried: 0), .failed, false, false),
        (APNsResult(outcome: .failed(status: 413, reason: .payloadTooLarge), attempts: 1, retried: 0), .failed, false, false),
        (APNsResult(outcome: .failed(status: 400, reason: .unknown("SomethingNew")), attempts: 1, retried: 0), .failed, false, false),
        (APNsResult(outcome: .failed(status: 403, reason: .invalidProviderToken), attempts: 1, retried: 0), .queued, false, true),
        (APNsResult(outcome: .failed(status: 400, reason: .topicDisallowed), attempts: 1, retried: 0), .queued, false, true),
        (APNsResult(outcome: .failed(status: 429, reason: .tooManyRequests), attempts: 5, retried: 4), .retry, false, false),
        (APNsResult(outcome: .failed(status: 500, reason: .internalServerError), attempts: 5, retried: 4), .retry, false, false),
        (APNsResult(outcome: .failed(status: 502, reason: .unknown("")), attempts: 5, retried: 4), .retry, false, false),
        (APNsResult(outcome: .failed(status: 503, reason: .serviceUnavailable), attempts: 5, retried: 4), .retry, false, false),
        (APNsResult(outcome: .failed(status: 504, reason: .unknown("")), attempts: 5, retried: 4), .retry, false, false),
        (APNsResult(outcome: .failed(status: 403, reason: .expiredProviderToken), attempts: 2, retried: 1), .retry, false, false),
        (APNsResult(outcome: .failed(status: nil, reason: .connectionFailed), attempts: 5, retried: 4), .retry, true, false),
        (APNsResult(outcome: .failed(status: nil, reason: .timeout), attempts: 5, retried: 4), .retry, true, false),
        (APNsResult(outcome: .failed(status: nil, reason: .clientShutdown), attempts: 1, retried: 0), .queued, false, false),
    ]

    @Test("each answer is recorded as its class says; nothing transient becomes a failure")
    func classification() {
        for (result, status, transport, fatal) in Self.table {
            let d = DeliveryPolicy.decide(result, deliveryID: 7, deviceID: 8, priorAttempts: 0)
            #expect(d.outcome.status == status, "\(result)")
            #expect(d.transportFailure == transport, "\(result)")
            #expect((d.fatal != nil) == fatal, "\(result)")
            #expect(d.outcome.attempts == result.attempts)
            if status == .retry { #expect(d.outcome.delay >= 1) }
        }
    }

    @Test("the client retries at once exactly what the ledger would retry later")
    func clientAndLedgerAgree() {
        for (result, status, _, _) in Self.table {
            guard case .failed(let code, let reason) = result.outcome else { continue }
            let transient = if case .transient = APNsVerdict.of(status: code, reason: reason) { true } else { false }
            #expect(transient == (status == .retry), "\(result)")
        }
    }

    @Test("the backoff doubles every five attempts from 1 s (2 s after 429), at most ten minutes")
    func backoff() {
        #expect(DeliveryPolicy.backoff(status: 503, attempts: 1) == 1)
        #expect(DeliveryPolicy.backoff(status: 503, attempts: 5) == 2)
        #expect(DeliveryPolicy.backoff(status: 429, attempts: 5) == 4)
        #expect(DeliveryPolicy.backoff(status: nil, attempts: 14) == 4)
        #expect(DeliveryPolicy.backoff(status: nil, attempts: 40) == 256)
        #expect(DeliveryPolicy.backoff(status: 429, attempts: 1000) == 512)
        #expect(DeliveryPolicy.backoff(status: 429, attempts: 45) == 512)
        // Prior attempts count: the same answer after 10 earlier ones waits longer.
        let result = APNsResult(outcome: .failed(status: 503, reason: .serviceUnavailable), attempts: 5, retried: 4)
        #expect(DeliveryPolicy.decide(result, deliveryID: 1, deviceID: 1, priorAttempts: 10).outcome.delay == 8)
    }
}
