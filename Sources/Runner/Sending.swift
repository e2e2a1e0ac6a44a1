import APNs
import Foundation
import HeraldCore
import Logging
import Store

/// What sends a notification: the APNs client, or a test double.
public protocol PushTransport: Sendable {
    func send(_ notification: APNsNotification) async -> APNsResult
}

extension APNsClient: PushTransport {}

/// A run stops at once when APNs refuses the provider itself (a wrong key,
/// team or topic): every later request would be refused the same way.
public struct RunAborted: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { reason }
}

extension CampaignRun {
    /// Claims, sends and records the campaign's queued deliveries until none
    /// is left, with at most `concurrency` notifications in flight.
    func send(_ prepared: PreparedCampaign, runID: Int64, summary: inout CampaignSummary,
              figures: inout RunFigures, logger: Logger) async throws {
        guard let transport else { return }
        let campaign = prepared.campaign
        var pending: [DeliveryOutcome] = []
        pending.reserveCapacity(options.recordBatch)
        var fatal: String?

        // One task group for the whole campaign: the next batch is claimed
        // while the last one's notifications are still in flight.
        try await withThrowingTaskGroup(of: Sent.self) { group in
            var inFlight = 0
            func collect(_ outcome: DeliveryOutcome) async throws {
                pending.append(outcome)
                summary.count(outcome, into: &figures)
                if pending.count >= options.recordBatch {
                    try await store.record(pending)
                    pending.removeAll(keepingCapacity: true)
                }
            }
            func finishOne() async throws {
                if let done = try await group.next() {
                    inFlight -= 1
                    fatal = fatal ?? done.fatal
                    try await collect(done.outcome)
                }
            }

            claiming: while fatal == nil {
                // A marketer's pause or cancel is honoured between batches.
                switch try await store.campaignStatus(campaign.id) {
                case .paused?:
                    logger.notice("campaign paused; its queued deliveries wait")
                    break claiming
                case .cancelled?:
                    try await store.cancelQueued(campaign.id)
                    logger.notice("campaign cancelled; its queued deliveries were cancelled")
                    break claiming
                case .failed?, .completed?, .draft?, nil:
                    break claiming
                case .running?, .scheduled?:
                    break
                }
                if let end = campaign.expiresAt, end <= Date() { break claiming }

                let batch = try await store.claim(campaign: campaign.id, run: runID, limit: options.batchSize)
                if batch.isEmpty { break }

                for delivery in batch {
                    while fatal == nil, inFlight >= options.concurrency { try await finishOne() }
                    if fatal != nil {
                        // Back to the queue, untouched: nothing was sent for it.
                        try await collect(DeliveryOutcome(deliveryID: delivery.target.deliveryID,
                                                          deviceID: delivery.deviceID, status: .queued, attempts: 0))
                        continue
                    }
                    switch personalizer.extras(for: prepared, target: delivery.target) {
                    case .failure(let problem):
                        try await collect(DeliveryOutcome(deliveryID: delivery.target.deliveryID, deviceID: delivery.deviceID,
                                                          status: .skipped, error: problem.message, attempts: 0))
                    case .success(let extras):
                        let payload = prepared.builder.payload(for: delivery.target, replyToken: extras.replyToken,
                                                               sealed: extras.sealed)
                        let headers = prepared.builder.headers(for: delivery.target, topic: options.topic)
                        let notification = APNsNotification(
                            deviceToken: delivery.target.deviceToken,
                            environment: delivery.target.environment == "sandbox" ? .sandbox : .production,
                            pushType: headers.pushType, priority: headers.priority, expiration: headers.expiration,
                            collapseID: headers.collapseID, apnsID: headers.apnsID, topic: headers.topic,
                            payload: payload)
                        group.addTask {
                            let result = await transport.send(notification)
                            return Self.outcome(result, delivery: delivery)
                        }
                        inFlight += 1
                    }
                }
            }
            while inFlight > 0 { try await finishOne() }
        }
        try await store.record(pending)
        if let fatal {
            throw RunAborted(reason: "APNs refused the provider (\(fatal)); check APNS_KEY_PATH, APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC")
        }
        if try await store.completeIfDone(campaign.id) {
            summary.completed = true
            logger.info("campaign completed")
        }
    }

    /// One finished send: its ledger outcome and, when APNs refused the
    /// provider itself, why the run must stop.
    struct Sent: Sendable {
        var outcome: DeliveryOutcome
        var fatal: String?
    }

    static func outcome(_ result: APNsResult, delivery: ClaimedDelivery) -> Sent {
        let id = delivery.target.deliveryID
        switch result.outcome {
        case .sent:
            return Sent(outcome: DeliveryOutcome(deliveryID: id, deviceID: delivery.deviceID, status: .sent,
                                                 attempts: result.attempts))
        case .deviceInvalid(let reason, let timestamp):
            return Sent(outcome: DeliveryOutcome(deliveryID: id, deviceID: delivery.deviceID, status: .invalid,
                                                 error: reason.rawValue, attempts: result.attempts, invalidSince: timestamp))
        case .failed(let status, let reason):
            let text = status.map { "\($0) \(reason.rawValue)" } ?? reason.rawValue
            let outcome = DeliveryOutcome(deliveryID: id, deviceID: delivery.deviceID, status: .failed,
                                          error: text, attempts: result.attempts)
            return Sent(outcome: outcome, fatal: reason.isFatalForRun ? text : nil)
        }
    }
}

extension CampaignSummary {
    mutating func count(_ outcome: DeliveryOutcome, into figures: inout RunFigures) {
        figures.retried += max(0, outcome.attempts - 1)
        switch outcome.status {
        case .sent: sent += 1; figures.sent += 1
        case .invalid: invalid += 1; figures.invalid += 1
        case .failed: failed += 1; figures.failed += 1
        case .skipped: skipped += 1; figures.skipped += 1
        case .queued: break
        }
    }
}
