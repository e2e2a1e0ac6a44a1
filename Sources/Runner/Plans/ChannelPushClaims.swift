import APNs
import Foundation
import HeraldCore
import Logging
import NIOConcurrencyHelpers
import Store

/// A sale's step pushed once to each of its broadcast channels (DESIGN, contract 10,
/// "Broadcast channels"): the step's `channel_pushes`, claimed under the run's lease through
/// the step's gate, sent by the engine through `ChannelPushTransport` with the run's breakers,
/// fence, backoff and stop, as deliveries are.
struct ChannelPushClaims: ClaimSource {
    /// One channel push claimed: a number of this source stands for its delivery id.
    struct Item: ClaimedItem {
        let push: ChannelPush
        let deliveryID: Int64
        var deviceID: Int64 { 0 }
        var environment: APNsEnvironment { push.key.environment }
        var app: String { push.key.app }
        /// The claim counted this attempt already.
        var priorAttempts: Int { max(0, push.attempts - 1) }
    }

    let activities: LiveActivityStore
    let db: DatabaseRetry
    /// The step's campaign row.
    let step: Int64
    let sale: ActivityPlan
    let runID: Int64
    let apps: AppRoutes
    let logger: Logger
    let pushes = ChannelPushBook()

    func claim(after cursor: Int64, excludingApps apps: [String]) async throws -> ClaimBatch<Item> {
        let (activities, step, run) = (activities, step, runID)
        let claimed = try await db("claim the step's broadcasts") { try await activities.claimChannelPushes(step: step, run: run) }
        var items: [Item] = []
        for push in claimed {
            if apps.contains(push.key.app) {
                // APNs refused this app's credential in this run: the push waits for a person.
                let outcome = ChannelPushOutcome.retry(after: .seconds(DeliveryPolicy.longestBackoff),
                                                       error: "the app's credential was refused in this run")
                try await db("record the step's broadcast") {
                    try await activities.recordChannelPush(step: step, key: push.key, run: run, outcome: outcome)
                }
                continue
            }
            items.append(Item(push: push, deliveryID: pushes.add(push)))
        }
        return ClaimBatch(items: items, end: cursor)
    }

    func notification(for item: Item) -> Result<APNsNotification, CampaignProblem> {
        let payload = sale.payload
        let due = payload.steps[sale.step]
        let bytes = payload.payload(due, address: .activity, locale: payload.campaign.defaultLocale, stockLeft: sale.stockLeft)
        guard bytes.count <= PayloadBuilder.broadcastMaxBytes else {
            return .failure(CampaignProblem("payload of \(bytes.count) bytes: a broadcast takes at most \(PayloadBuilder.broadcastMaxBytes)"))
        }
        // A request id of its own for each attempt, recorded when APNs takes it.
        let requestID = UUID()
        pushes.sending(item.deliveryID, requestID: requestID)
        return .success(APNsNotification(
            deviceToken: item.push.channel, environment: item.push.key.environment, pushType: "liveactivity",
            priority: payload.priority(due), expiration: Int(payload.expiration(due).timeIntervalSince1970),
            apnsID: requestID, topic: PushTopic.liveActivity(apps.topic(app: item.app)), payload: bytes,
            credential: apps.credential(app: item.app, environment: item.environment)))
    }

    func record(_ outcomes: [DeliveryOutcome]) async throws {
        let (activities, step, run) = (activities, step, runID)
        for outcome in outcomes {
            guard let (push, requestID) = pushes.take(outcome.deliveryID) else { continue }
            let recorded: ChannelPushOutcome = switch outcome.status {
            case .sent: .sent(requestID: requestID ?? UUID())
            case .queued, .retry: .retry(after: .seconds(outcome.delay), error: outcome.error ?? "given back")
            case .failed, .invalid, .skipped: .failed(outcome.error ?? outcome.status.rawValue)
            }
            try await db("record the step's broadcast") {
                try await activities.recordChannelPush(step: step, key: push.key, run: run, outcome: recorded)
            }
            var metadata: Logger.Metadata = ["app": "\(push.key.app)", "environment": "\(push.key.environment.rawValue)",
                                             "step": "\(sale.step)", "attempt": "\(push.attempts)"]
            if case .sent = recorded {
                logger.notice("step broadcast to its channel", metadata: metadata)
            } else {
                metadata["error"] = "\(outcome.error ?? outcome.status.rawValue)"
                logger.warning("step broadcast not sent", metadata: metadata)
            }
        }
    }

    func nextDue(excludingApps: [String]) async throws -> Duration? {
        let (activities, step) = (activities, step)
        guard let next = try await db("find the step's next broadcast", { try await activities.nextChannelPush(step: step) }) else {
            return nil
        }
        return .seconds(max(next.timeIntervalSinceNow, 0))
    }
}

/// The channel pushes a `ChannelPushClaims` holds, by the number it gave each, with the
/// request id of the attempt under way; `ChannelPushTransport` finds the channel by it.
final class ChannelPushBook: Sendable {
    private struct State {
        var next: Int64 = 0
        var held: [Int64: (push: ChannelPush, requestID: UUID?)] = [:]
        var byRequest: [UUID: ChannelPush] = [:]
    }

    private let state = NIOLockedValueBox(State())

    func add(_ push: ChannelPush) -> Int64 {
        state.withLockedValue { s in
            s.next += 1
            s.held[s.next] = (push, nil)
            return s.next
        }
    }

    func sending(_ id: Int64, requestID: UUID) {
        state.withLockedValue { s in
            guard let push = s.held[id]?.push else { return }
            s.held[id]?.requestID = requestID
            s.byRequest[requestID] = push
        }
    }

    /// The push an attempt is for.
    func push(request: UUID) -> ChannelPush? {
        state.withLockedValue { $0.byRequest[request] }
    }

    /// A push whose outcome is recorded, and the request id of its last attempt.
    func take(_ id: Int64) -> (ChannelPush, UUID?)? {
        state.withLockedValue { s in
            guard let held = s.held.removeValue(forKey: id) else { return nil }
            if let request = held.requestID { s.byRequest[request] = nil }
            return (held.push, held.requestID)
        }
    }
}
