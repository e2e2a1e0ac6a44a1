import APNs
import Foundation
import HeraldCore
@testable import Runner
import Store
import Testing

/// The sending session's rules on plain values: no database, no APNs, no
/// clock but the instants each step is given.
@Suite("The sending session as a state machine")
struct SendingSessionTests {
    struct Row: ClaimedItem, Hashable {
        var deliveryID: Int64
        var deviceID: Int64 { deliveryID + 1000 }
        var environment = APNsEnvironment.production
        var app = "default"
        var priorAttempts = 0
        /// Its pace's send slot (nil: not paced).
        var sendAt: ContinuousClock.Instant?
    }

    typealias Session = SendingSession<Row>

    static let start = ContinuousClock().now
    static let settings = Session.Settings(concurrency: 2, repeatBound: 5, writeAt: 2, recordInterval: .milliseconds(250),
                                           stopGrace: .seconds(20))

    static func session(concurrency: Int = 2, repeatBound: Int = 5, threshold: Int = 3) -> Session {
        var settings = settings
        settings.concurrency = concurrency
        settings.repeatBound = repeatBound
        return Session(settings: settings, breakers: APNsBreakers(threshold: threshold), epoch: 0, now: start)
    }

    static func at(_ ms: Int64, stop: ContinuousClock.Instant? = nil, maySend: Bool = true, epoch: Int = 0,
                   expired: Bool = false) -> Session.Conditions {
        .init(now: start + .milliseconds(ms), maySend: maySend, epoch: epoch, stopRequestedAt: stop, expired: expired)
    }

    static func rows(_ ids: ClosedRange<Int64>) -> [Row] { ids.map { Row(deliveryID: $0) } }
    static let ok = APNsResult(outcome: .sent(apnsID: UUID()), attempts: 1, retried: 0)
    static let unavailable = APNsResult(outcome: .failed(status: 503, reason: .serviceUnavailable), attempts: 5, retried: 4)
    static let noConnection = APNsResult(outcome: .failed(status: nil, reason: .connectionFailed), attempts: 5, retried: 4)

    /// Describes an action without its payload, for comparisons.
    static func name(_ action: Session.Action) -> String {
        switch action {
        case .claim(let after): "claim after \(after)"
        case .send(let row): "send \(row.deliveryID)"
        case .write(let outcomes): "write " + outcomes.map { "\($0.deliveryID):\($0.status.rawValue)" }.joined(separator: ",")
        case .shutdownTransport: "shutdown"
        case .cancelSends: "cancel sends"
        case .wait: "wait"
        case .waitForSlot(let slot): "wait for the slot at \(Int((slot - start) / .milliseconds(1))) ms"
        case .end(let end): "end \(end)"
        }
    }

    /// Describes a session's phase with its data.
    static func phase(_ session: Session) -> String {
        switch session.phase {
        case .sending: "sending"
        case .draining(let d):
            "draining \(d.end)" + (d.transportShutDown ? ", transport shut down" : "") + (d.sendsCancelled ? ", sends cancelled" : "")
        case .flushing(let end): "flushing \(end)"
        }
    }

    @Test("claims, sends within the concurrency, prefetches the next batch, writes, drains and ends")
    func wholeSession() {
        var s = Self.session()
        #expect(Self.name(s.next(Self.at(0))) == "claim after 0")
        #expect(Self.name(s.next(Self.at(0))) == "wait", "one claim at a time")
        #expect(s.waitCause == .claim)
        s.claimAnswered(ClaimBatch(items: Self.rows(1...3), end: 3))
        #expect(Self.name(s.next(Self.at(1))) == "claim after 3", "the next batch is claimed while this one is sent")
        #expect(Self.name(s.next(Self.at(1))) == "send 1")
        #expect(Self.name(s.next(Self.at(1))) == "send 2")
        #expect(Self.name(s.next(Self.at(1))) == "wait", "concurrency 2")
        #expect(s.waitCause == .window)
        s.sent(Row(deliveryID: 1), result: Self.ok, at: Self.start)
        #expect(Self.name(s.next(Self.at(2))) == "send 3")
        s.sent(Row(deliveryID: 2), result: Self.ok, at: Self.start)
        #expect(Self.name(s.next(Self.at(2))) == "write 1:sent,2:sent", "two outcomes are due for writing")
        s.claimAnswered(ClaimBatch(items: [], end: 3))
        // Drained: waits for what is in flight and the write, then ends.
        #expect(Self.name(s.next(Self.at(3))) == "wait")
        #expect(s.waitCause == .other, "draining")
        s.recorded()
        s.sent(Row(deliveryID: 3), result: Self.ok, at: Self.start)
        #expect(Self.name(s.next(Self.at(4))) == "write 3:sent", "the last outcomes are written before the end")
        s.recorded()
        #expect(Self.name(s.next(Self.at(5))) == "end drained")
        #expect(s.tally.sent == 3)
    }

    @Test("outcomes not yet written and sends in flight never exceed the repeat bound")
    func repeatBound() {
        var s = Self.session(concurrency: 10, repeatBound: 3)
        _ = s.next(Self.at(0))
        s.claimAnswered(ClaimBatch(items: Self.rows(1...10), end: 10))
        var sent: [String] = []
        for _ in 0..<6 {
            let action = Self.name(s.next(Self.at(1)))
            if action.hasPrefix("send") { sent.append(action) }
        }
        #expect(sent == ["send 1", "send 2", "send 3"])
        #expect(s.inFlight == 3)
        // Answers arrive but are not written yet: still no room (3 waiting).
        for id: Int64 in 1...3 { s.sent(Row(deliveryID: id), result: Self.ok, at: Self.start) }
        #expect(Self.name(s.next(Self.at(1))) == "write 1:sent,2:sent,3:sent")
        #expect(Self.name(s.next(Self.at(1))) == "wait", "the write under way counts against the bound")
        #expect(s.waitCause == .repeatBound)
        s.recorded()
        #expect(Self.name(s.next(Self.at(2))) == "send 4")
    }

    @Test("a stop ends claiming, lets what is in flight finish within the grace, then ends the transport; unsent claims go back")
    func stopGrace() {
        var s = Self.session()
        _ = s.next(Self.at(0))
        s.claimAnswered(ClaimBatch(items: Self.rows(1...4), end: 4))
        _ = s.next(Self.at(1)) // prefetch claim
        _ = s.next(Self.at(1))
        _ = s.next(Self.at(1))
        #expect(s.inFlight == 2)
        #expect(Self.phase(s) == "sending")
        let asked = Self.start + .seconds(1)
        #expect(Self.name(s.next(Self.at(1000, stop: asked))) == "wait", "within the grace")
        #expect(Self.phase(s) == "draining stopped")
        s.claimAnswered(ClaimBatch(items: Self.rows(5...6), end: 6))
        s.sent(Row(deliveryID: 1), result: Self.ok, at: Self.start)
        #expect(Self.name(s.next(Self.at(21_000, stop: asked))) == "write 1:sent")
        #expect(Self.name(s.next(Self.at(21_001, stop: asked))) == "shutdown", "the grace is over")
        #expect(Self.phase(s) == "draining stopped, transport shut down")
        #expect(Self.name(s.next(Self.at(21_002, stop: asked))) == "wait", "once: the transport is told to end only once")
        s.recorded()
        s.sent(Row(deliveryID: 2), result: APNsResult(outcome: .failed(status: nil, reason: .clientShutdown), attempts: 1, retried: 0),
               at: Self.start)
        #expect(Self.name(s.next(Self.at(21_003, stop: asked))) == "write 2:queued,3:queued,4:queued,5:queued,6:queued",
                "ended by our stop: queued again, with the claims never sent")
        #expect(Self.phase(s) == "flushing stopped")
        s.recorded()
        #expect(Self.name(s.next(Self.at(21_004, stop: asked))) == "end stopped")
        #expect(s.tally.requeued == 5)
    }

    @Test("a lapsed lease fences the session: no send starts, in-flight sends are cancelled, their claims given back")
    func fencing() {
        var s = Self.session()
        _ = s.next(Self.at(0))
        s.claimAnswered(ClaimBatch(items: Self.rows(1...3), end: 3))
        _ = s.next(Self.at(1))
        #expect(Self.name(s.next(Self.at(1))) == "send 1")
        #expect(Self.name(s.next(Self.at(2, maySend: false))) == "wait", "a renewal is late: no new send, nothing cancelled")
        var lapsed = s
        #expect(Self.name(lapsed.next(Self.at(3, maySend: false, epoch: 1))) == "cancel sends")
        #expect(Self.phase(lapsed) == "draining fenced, sends cancelled" && lapsed.sendsCancelled)
        #expect(Self.name(lapsed.next(Self.at(3, maySend: false, epoch: 1))) == "wait", "cancelled once")
        lapsed.sent(Row(deliveryID: 1), result: Self.ok, at: Self.start)
        lapsed.claimAnswered(ClaimBatch(items: [], end: 3))
        #expect(Self.name(lapsed.next(Self.at(4, maySend: false, epoch: 1))) == "write 1:sent,2:queued,3:queued")
        lapsed.recorded()
        #expect(Self.name(lapsed.next(Self.at(5, maySend: false, epoch: 1))) == "end fenced")
    }

    @Test("a pause or cancel seen by a claim ends the session; so does a run declared gone, and an expiry")
    func claimAnswers() {
        for (status, end) in [(CampaignStatus.paused, "end paused"), (.cancelled, "end cancelled"), (.running, "end drained")] {
            var s = Self.session()
            _ = s.next(Self.at(0))
            s.claimAnswered(ClaimBatch(items: [], end: 0, status: status))
            #expect(Self.name(s.next(Self.at(1))) == end)
        }
        var gone = Self.session()
        _ = gone.next(Self.at(0))
        gone.claimAnswered(ClaimBatch(items: [], end: 0, runGone: true))
        #expect(Self.name(gone.next(Self.at(1))) == "end declaredGone")
        var expired = Self.session()
        _ = expired.next(Self.at(0))
        expired.claimAnswered(ClaimBatch(items: Self.rows(1...2), end: 2))
        #expect(Self.name(expired.next(Self.at(1, expired: true))) == "write 1:queued,2:queued")
        expired.recorded()
        #expect(Self.name(expired.next(Self.at(2, expired: true))) == "end expired")
    }

    @Test("a pause seen by the claim ahead stops the batch under way: what it has not sent goes back")
    func pauseSeenAhead() {
        for (status, end) in [(CampaignStatus.paused, "end paused"), (.cancelled, "end cancelled")] {
            var s = Self.session()
            _ = s.next(Self.at(0))
            s.claimAnswered(ClaimBatch(items: Self.rows(1...4), end: 4))
            #expect(Self.name(s.next(Self.at(1))) == "claim after 4")
            #expect(Self.name(s.next(Self.at(1))) == "send 1")
            s.claimAnswered(ClaimBatch(items: [], end: 4, status: status))
            // Nothing more is sent: 1 finishes, 2…4 go back as they were.
            #expect(Self.name(s.next(Self.at(2))) == "wait")
            s.sent(Row(deliveryID: 1), result: Self.ok, at: Self.start)
            #expect(Self.name(s.next(Self.at(3))) == "write 1:sent,2:queued,3:queued,4:queued")
            s.recorded()
            #expect(Self.name(s.next(Self.at(4))) == end)
        }
        // Drained ahead (nothing left to claim) is no stop: the batch under way is sent whole.
        var s = Self.session()
        _ = s.next(Self.at(0))
        s.claimAnswered(ClaimBatch(items: Self.rows(1...2), end: 2))
        _ = s.next(Self.at(1))
        s.claimAnswered(ClaimBatch(items: [], end: 2, status: .running))
        #expect(Self.name(s.next(Self.at(1))) == "send 1")
        #expect(Self.name(s.next(Self.at(1))) == "send 2")
    }

    @Test("consecutive transport failures open the host's breaker: the session ends and gives back what it holds")
    func breakerOpens() {
        var s = Self.session(concurrency: 3, repeatBound: 50, threshold: 3)
        _ = s.next(Self.at(0))
        s.claimAnswered(ClaimBatch(items: Self.rows(1...5), end: 5))
        _ = s.next(Self.at(1))
        for id: Int64 in 1...3 { #expect(Self.name(s.next(Self.at(1))) == "send \(id)") }
        for id: Int64 in 1...3 { s.sent(Row(deliveryID: id), result: Self.noConnection, at: Self.start + .milliseconds(2)) }
        let action = s.next(Self.at(3))
        guard case .write(let outcomes) = action else {
            Issue.record("expected a write, got \(Self.name(action))")
            return
        }
        #expect(outcomes.map(\.status) == [.retry, .retry, .retry])
        s.recorded()
        s.claimAnswered(ClaimBatch(items: [], end: 5))
        let host = APNsEnvironment.production.host
        #expect(Self.name(s.next(Self.at(4))) == "write 4:queued,5:queued")
        s.recorded()
        #expect(Self.name(s.next(Self.at(5))) == "end breakerOpen(\"\(host)\")")
        #expect(s.breakers[host].reopenAt != nil)
        // The next session probes with one notification once the breaker may reopen.
        var probe = Session(settings: Self.settings, breakers: s.breakers, epoch: 0, now: Self.start + .seconds(2))
        _ = probe.next(Self.at(2000))
        probe.claimAnswered(ClaimBatch(items: Self.rows(4...5), end: 5))
        _ = probe.next(Self.at(2000))
        #expect(Self.name(probe.next(Self.at(2000))) == "send 4")
        #expect(Self.name(probe.next(Self.at(2000))) == "wait", "one probe at a time")
        probe.sent(Row(deliveryID: 4), result: Self.ok, at: Self.start + .seconds(2))
        #expect(Self.name(probe.next(Self.at(2001))) == "send 5", "the probe's answer closes the breaker")
    }

    @Test("APNs refusing an app's credential holds back that app's items, untried; the other apps' go on")
    func appRefused() {
        var s = Self.session(concurrency: 1, repeatBound: 10)
        _ = s.next(Self.at(0))
        let shop = [Row(deliveryID: 1, app: "shop"), Row(deliveryID: 2), Row(deliveryID: 3, app: "shop"), Row(deliveryID: 4)]
        s.claimAnswered(ClaimBatch(items: shop, end: 4))
        #expect(Self.name(s.next(Self.at(1))) == "claim after 4")
        #expect(Self.name(s.next(Self.at(1))) == "send 1")
        s.sent(Row(deliveryID: 1, app: "shop"),
               result: APNsResult(outcome: .failed(status: 403, reason: .invalidProviderToken), attempts: 1, retried: 0),
               at: Self.start)
        #expect(s.breakers.refusedApps["shop"] == AppRefusal(app: "shop", environment: .production, answer: "403 InvalidProviderToken"))
        #expect(Self.name(s.next(Self.at(2))) == "send 2", "the other app's item goes out")
        s.sent(Row(deliveryID: 2), result: Self.ok, at: Self.start)
        #expect(Self.name(s.next(Self.at(3))) == "write 1:queued,2:sent")
        // Item 3 is shop's: given back untried, past the run's retry wait; 4 is sent.
        #expect(Self.name(s.next(Self.at(3))) == "send 4")
        #expect(s.tally.sent == 1 && s.tally.requeued == 2 && s.tally.failed == 0)
    }

    @Test("a refused app's answer is recorded queued, with APNs' reason, due at once for a later run")
    func refusedStaysQueued() {
        var s = Self.session()
        _ = s.next(Self.at(0))
        s.claimAnswered(ClaimBatch(items: [Row(deliveryID: 1, app: "shop")], end: 1))
        _ = s.next(Self.at(1))
        _ = s.next(Self.at(1))
        s.sent(Row(deliveryID: 1, app: "shop"),
               result: APNsResult(outcome: .failed(status: 403, reason: .badCertificate), attempts: 1, retried: 0),
               at: Self.start)
        s.claimAnswered(ClaimBatch(items: [], end: 1))
        guard case .write(let batch) = s.next(Self.at(2)) else { Issue.record("a write"); return }
        #expect(batch.map(\.status) == [.queued])
        #expect(batch[0].delay == 0 && batch[0].error == "403 BadCertificate")
        s.recorded()
        #expect(Self.name(s.next(Self.at(3))) == "end drained")
    }

    @Test("an item that cannot be built is skipped, never sent, and frees its slot")
    func skipped() {
        var s = Self.session(concurrency: 1)
        _ = s.next(Self.at(0))
        s.claimAnswered(ClaimBatch(items: Self.rows(1...2), end: 2))
        _ = s.next(Self.at(1))
        #expect(Self.name(s.next(Self.at(1))) == "send 1")
        s.skipped(Row(deliveryID: 1), reason: "device has no registered key for the sealed fields")
        #expect(Self.name(s.next(Self.at(1))) == "send 2")
        #expect(s.tally.skipped == 1)
    }

    /// Paced rows: a session sends each at its slot, not before, and gives up a slot passed by
    /// more than `missedSlot` without sending (the row goes back to the queue untried).
    static func paced(_ id: Int64, slot ms: Int64) -> Row {
        Row(deliveryID: id, sendAt: start + .milliseconds(ms))
    }

    @Test("a paced row waits for its slot, leaves at it, and a slot passed by more than 250 ms goes back untried")
    func pacedRowsLeaveAtTheirSlots() {
        var s = Self.session(concurrency: 5, repeatBound: 10)
        #expect(Self.name(s.next(Self.at(0))) == "claim after 0")
        s.claimAnswered(ClaimBatch(items: [Self.paced(1, slot: 100), Self.paced(2, slot: 600), Self.paced(3, slot: 700)], end: 3))
        #expect(Self.name(s.next(Self.at(0))) == "claim after 3")
        #expect(Self.name(s.next(Self.at(0))) == "wait for the slot at 100 ms")
        #expect(s.waitCause == .slot)
        #expect(Self.name(s.next(Self.at(99))) == "wait for the slot at 100 ms", "not a millisecond early")
        #expect(Self.name(s.next(Self.at(100))) == "send 1")
        #expect(Self.name(s.next(Self.at(100))) == "wait for the slot at 600 ms")
        // Woken late (the process starved): at 850 ms, 2's slot is 250 ms past, so it still leaves.
        #expect(Self.name(s.next(Self.at(850))) == "send 2")
        s.sent(Self.paced(1, slot: 100), result: Self.ok, at: Self.start)
        s.sent(Self.paced(2, slot: 600), result: Self.ok, at: Self.start)
        #expect(Self.name(s.next(Self.at(951))) == "write 1:sent,2:sent")
        s.recorded()
        s.claimAnswered(ClaimBatch(items: [], end: 3))
        // At 951 ms, 3's slot is 251 ms past: it goes back to the queue untried, and the session ends.
        #expect(Self.name(s.next(Self.at(951))) == "write 3:queued")
        s.recorded()
        #expect(Self.name(s.next(Self.at(951))) == "end drained")
        #expect(s.tally.sent == 2)
        #expect(s.tally.requeued == 1, "3's slot was given up, nothing sent for it")
        #expect(s.inFlight == 0)
    }

    @Test("a stop or a lapsed lease while a paced row waits for its slot sends nothing more and gives the row back")
    func aStopWhileWaitingForASlotSendsNothing() {
        for stop in [true, false] {
            var s = Self.session(concurrency: 5, repeatBound: 10)
            #expect(Self.name(s.next(Self.at(0))) == "claim after 0")
            s.claimAnswered(ClaimBatch(items: [Self.paced(1, slot: 1000), Self.paced(2, slot: 2000)], end: 2))
            #expect(Self.name(s.next(Self.at(0))) == "claim after 2")
            #expect(Self.name(s.next(Self.at(0))) == "wait for the slot at 1000 ms")
            s.claimAnswered(ClaimBatch(items: [], end: 2))
            let c = stop ? Self.at(500, stop: Self.start + .milliseconds(400)) : Self.at(500, maySend: false)
            #expect(Self.name(s.next(c)) == "write 1:queued,2:queued", "stop: \(stop)")
            s.recorded()
            #expect(Self.name(s.next(c)) == (stop ? "end stopped" : "end fenced"))
            #expect(s.tally.sent == 0 && s.tally.requeued == 2)
        }
    }
}
