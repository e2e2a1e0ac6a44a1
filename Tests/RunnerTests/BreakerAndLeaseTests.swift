import APNs
import Foundation
import HeraldCore
@testable import Runner
import Store
import Testing

@Suite("The circuit breaker and the lease clock on plain values")
struct BreakerAndLeaseTests {
    static let t0 = ContinuousClock().now

    @Test("the breaker opens after the threshold, probes once, doubles its wait to 30 s, closes on an answer")
    func breaker() {
        var b = CircuitBreaker(threshold: 2)
        b.record(transportFailure: true, error: "x", at: Self.t0)
        guard case .closed = b.gate(at: Self.t0, probeInFlight: false) else { Issue.record("closed below the threshold"); return }
        b.record(transportFailure: true, error: "x", at: Self.t0)
        guard case .open = b.gate(at: Self.t0 + .milliseconds(500), probeInFlight: false) else { Issue.record("open"); return }
        guard case .probe = b.gate(at: Self.t0 + .seconds(1), probeInFlight: false) else { Issue.record("probe"); return }
        guard case .waitForProbe = b.gate(at: Self.t0 + .seconds(1), probeInFlight: false) else { Issue.record("one probe"); return }
        b.record(transportFailure: true, error: "x", at: Self.t0 + .seconds(1))
        #expect(b.reopenAt == Self.t0 + .seconds(3), "the wait doubled")
        // Each failed probe doubles the wait: 4, 8, 16, then 30 s at most.
        for _ in 0..<5 {
            let at = b.reopenAt ?? Self.t0
            guard case .probe = b.gate(at: at, probeInFlight: false) else { Issue.record("probe"); return }
            b.record(transportFailure: true, error: "x", at: at)
        }
        #expect(b.wait == .seconds(30))
        #expect(b.outageSince == Self.t0)
        b.record(transportFailure: false, error: nil, at: Self.t0 + .seconds(60))
        #expect(b.reopenAt == nil && b.outageSince == nil && b.wait == .seconds(1))
    }

    @Test("a send may start only when it ends before the lease; a lapse moves the epoch once")
    func leaseClock() {
        let clock = LeaseClock(lease: .seconds(10), sendSpan: .seconds(3), renewedAt: Self.t0)
        func check(_ s: Int64) -> String {
            let c = clock.check(at: Self.t0 + .seconds(s))
            return "\(c.maySend) \(c.epoch)"
        }
        #expect(check(6) == "true 0")
        #expect(check(7) == "false 0", "a send would outlast the lease")
        #expect(check(11) == "false 1", "the lease lapsed: a new epoch")
        #expect(check(12) == "false 1")
        clock.renewed(asked: Self.t0 + .seconds(12), seen: Self.t0 + .seconds(12))
        #expect(check(13) == "true 1", "renewed: sends resume in the new epoch")
    }
}
