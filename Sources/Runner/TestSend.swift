import APNs
import ExtensionKit
import Foundation
import HeraldCore
import Lifecycle
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import Store

/// What APNs answered to one test notification.
public struct TestSendAnswer: Sendable, Hashable {
    public var deliveryID: Int64
    public var deviceToken: String
    public var locale: String
    /// The campaign variant whose text was sent (nil: the campaign has none).
    public var variant: String?
    /// `sent`, `invalid`, `failed` or `skipped` (not sent: e.g. no key for the sealed fields).
    public var status: String
    /// The HTTP status APNs answered, when it answered.
    public var httpStatus: Int?
    public var apnsID: UUID
    public var reason: String?
    public var payloadBytes: Int

    /// One line for a person; the token is shortened.
    public var line: String {
        let token = deviceToken.count > 12 ? "\(deviceToken.prefix(8))…\(deviceToken.suffix(4))" : deviceToken
        var s = "device \(token) (\(variant.map { "variant \($0), " } ?? "")\(locale)), delivery \(deliveryID): \(status)"
        s += ", status \(httpStatus.map(String.init) ?? "none"), apns-id \(apnsID.uuidString.lowercased())"
        if let reason { s += ", reason \(reason)" }
        s += ", \(payloadBytes) bytes"
        return s
    }
}

/// `herald send-test`: one real notification of a campaign to named devices,
/// through the run's own builder, personalizer (reply token, sealed fields),
/// APNs client and sending engine (the same breaker, retries, stop grace and
/// exit status as a run), recorded in the ledger as a test (a `deliveries` row of kind 'test').
public struct TestSend: Sendable {
    public let stores: RunStores
    public let personalizer: any DeliveryPersonalizer
    public let transport: any PushTransport
    public let options: RunOptions
    public let logger: Logger

    /// `options` as a run's; an interactive command waits out an outage or
    /// a retry for at most `TestSend.longestWait`.
    public init(stores: RunStores, options: RunOptions, personalizer: any DeliveryPersonalizer,
                transport: any PushTransport, logger: Logger) {
        var options = options
        options.outageBudget = min(options.outageBudget, Self.longestWait)
        options.retryWait = min(options.retryWait, Self.longestWait)
        self.stores = stores
        self.options = options
        self.personalizer = personalizer
        self.transport = transport
        self.logger = logger
    }

    public init(stores: RunStores, topic: String, personalizer: any DeliveryPersonalizer, transport: any PushTransport) {
        self.init(stores: stores, options: RunOptions(topic: topic), personalizer: personalizer, transport: transport,
                  logger: stores.ledger.logger)
    }

    /// The longest a test send waits for APNs to come back, or for a retry.
    public static let longestWait = Duration.seconds(30)

    /// Sends campaign `id` to `recipient`: the text of `variant` when the
    /// campaign has variants (the first by name when nil). Throws
    /// `CampaignProblem` when a run would fail the campaign, the variant is
    /// not one of the campaign's, or no device matches; `RunAborted` when
    /// APNs refuses the provider itself. A device APNs could not be reached
    /// for (an outage, a stop) is answered `unsent`, its row `cancelled`.
    public func send(campaign id: Int64, to recipient: TestSendRecipient, variant: String? = nil) async throws -> [TestSendAnswer] {
        let db = DatabaseRetry(options, logger: logger)
        let (campaigns, ledger) = (stores.campaigns, stores.ledger)
        let due = try await db("load campaign") { try await campaigns.loadCampaign(id) }
        let prepared = try PreparedCampaign(campaign: due.campaign, segmentName: due.segmentName, segmentRule: due.segmentRule)
        let chosen = try Self.variant(variant, of: due.campaign)
        var deliveries = try await db("record the test deliveries") {
            try await ledger.beginTestSend(campaign: id, to: recipient, variant: chosen)
        }
        try await CampaignClaims.readPersonalValues(&deliveries, prepared: prepared, ledger: ledger, db: db)
        guard !deliveries.isEmpty else {
            switch recipient {
            case .device:
                throw CampaignProblem("no such device: the token is not registered, was invalidated, or its user opted out")
            case .user(let user):
                throw CampaignProblem("user \"\(user)\" has no device to send to (unknown user, opted out, or no valid device)")
            }
        }
        let answers = AnsweringTransport(transport)
        let source = TestSendClaims(ledger: ledger, db: db, prepared: prepared, deliveries: deliveries,
                                    options: options, personalizer: personalizer)
        let engine = SendingEngine(transport: answers, options: options, leases: nil, logger: logger)
        let breakers = RunBreakers(threshold: options.breakerThreshold)
        var tally = SendTally()
        let finish = try await engine.send(source, breakers: breakers, tally: &tally)
        if let refusal = breakers.snapshot.refusedApps.values.first {
            throw RunAborted.providerRefused(options.apps.describe(refusal))
        }
        let unsent: String = switch finish {
        case .outage(let why): "not sent: \(why)"
        case .stopped: "not sent: stopped by a signal"
        default: "not sent: APNs did not accept it in time; try again"
        }
        let left = source.unsent()
        for delivery in left {
            try await db("record the test delivery") {
                try await ledger.recordTestSend(DeliveryOutcome(deliveryID: delivery.target.deliveryID,
                                                               deviceID: delivery.deviceID, status: .queued,
                                                               error: "test send: \(unsent)", attempts: 0), campaign: id)
            }
        }
        let recorded = source.outcomes()
        return deliveries.map { delivery in
            let target = delivery.target
            var answer = TestSendAnswer(deliveryID: target.deliveryID, deviceToken: target.deviceToken,
                                        locale: prepared.builder.campaign(variant: chosen).contentLocale(for: target.locale),
                                        variant: chosen, status: "unsent", httpStatus: nil, apnsID: target.apnsID,
                                        reason: unsent, payloadBytes: source.payloadBytes(target.deliveryID))
            if let result = answers.result(for: target.apnsID) {
                switch result.outcome {
                case .sent(let apnsID):
                    answer.httpStatus = 200
                    answer.apnsID = apnsID
                    answer.reason = nil
                case .deviceInvalid(let reason, _):
                    // APNs answers 410 for a token no longer valid, 400 for a bad one.
                    answer.httpStatus = (reason == .unregistered || reason == .expiredToken) ? 410 : 400
                    answer.reason = reason.description
                case .failed(let status, let reason):
                    answer.httpStatus = status
                    answer.reason = reason.description
                }
            }
            if let outcome = recorded[target.deliveryID] {
                answer.status = outcome.status.rawValue
                if outcome.status == .skipped { answer.reason = outcome.error }
            } else if !left.contains(where: { $0.target.deliveryID == target.deliveryID }) {
                answer.status = "unsent"
            }
            return answer
        }
    }

    /// The variant a test send carries: the one named (which must be the
    /// campaign's), else the campaign's first; nil for a campaign without variants.
    static func variant(_ name: String?, of campaign: Campaign) throws(CampaignProblem) -> String? {
        guard let name else { return campaign.variants.first?.name }
        guard campaign.variant(named: name) != nil else {
            let known = campaign.variants.map { "\"\($0.name)\"" }.joined(separator: ", ")
            throw CampaignProblem(campaign.variants.isEmpty
                ? "campaign \"\(campaign.name)\" has no variants; leave out --variant"
                : "campaign \"\(campaign.name)\" has no variant \"\(name)\"; its variants are \(known)")
        }
        return name
    }
}

/// A test send's deliveries: the rows `beginTestSend` wrote, which no run
/// ever claims (so they need no lease); a transient answer brings a row back
/// after the policy's backoff, within the command's wait.
final class TestSendClaims: ClaimSource, Sendable {
    private struct State {
        /// Rows not sent yet, each with when it is due.
        var waiting: [(delivery: ClaimedDelivery, due: ContinuousClock.Instant)]
        var outcomes: [Int64: DeliveryOutcome] = [:]
        var payloadBytes: [Int64: Int] = [:]
    }

    /// Every row of the test send, by delivery id.
    private let byID: [Int64: ClaimedDelivery]

    private let state: NIOLockedValueBox<State>
    let ledger: DeliveryLedger
    let db: DatabaseRetry
    let prepared: PreparedCampaign
    let options: RunOptions
    let personalizer: any DeliveryPersonalizer

    init(ledger: DeliveryLedger, db: DatabaseRetry, prepared: PreparedCampaign, deliveries: [ClaimedDelivery],
         options: RunOptions, personalizer: any DeliveryPersonalizer) {
        let now = options.clock.now
        self.state = NIOLockedValueBox(State(waiting: deliveries.map { ($0, now) }))
        self.byID = Dictionary(deliveries.map { ($0.target.deliveryID, $0) }, uniquingKeysWith: { a, _ in a })
        self.ledger = ledger
        self.db = db
        self.prepared = prepared
        self.options = options
        self.personalizer = personalizer
    }

    func claim(after cursor: Int64, excludingApps apps: [String]) async throws -> ClaimBatch<ClaimedDelivery> {
        let now = options.clock.now
        let due = state.withLockedValue { s -> [ClaimedDelivery] in
            let ready = { (w: (delivery: ClaimedDelivery, due: ContinuousClock.Instant)) in
                w.due <= now && !apps.contains(w.delivery.target.app)
            }
            let taken = s.waiting.filter(ready).map(\.delivery)
            s.waiting.removeAll(where: ready)
            return taken
        }
        return ClaimBatch(items: due)
    }

    func notification(for item: ClaimedDelivery) -> Result<APNsNotification, CampaignProblem> {
        // A test send shows the campaign's alert, whatever its kind: it starts no activity.
        let built = AlertPlan.notification(prepared: prepared, target: item.target, apps: options.apps,
                                           personalizer: personalizer)
        if case .success(let n) = built {
            state.withLockedValue { $0.payloadBytes[item.target.deliveryID] = n.payload.count }
        }
        return built
    }

    func record(_ outcomes: [DeliveryOutcome]) async throws {
        let now = options.clock.now
        for outcome in outcomes {
            switch outcome.status {
            case .queued, .retry:
                guard var again = byID[outcome.deliveryID] else { continue }
                again.attempts += outcome.attempts
                let due = now + .milliseconds(Int64(outcome.delay * 1000))
                state.withLockedValue { $0.waiting.append((again, due)) }
            case .sent, .invalid, .failed, .skipped:
                var written = outcome
                if outcome.status == .failed { written.error = "test send: \(outcome.error ?? "failed")" }
                let (ledger, campaign) = (ledger, prepared.campaign.id)
                let row = written
                try await db("record the test delivery") { try await ledger.recordTestSend(row, campaign: campaign) }
                state.withLockedValue { $0.outcomes[outcome.deliveryID] = outcome }
            }
        }
    }

    func nextDue(excludingApps apps: [String]) async throws -> Duration? {
        let now = options.clock.now
        return state.withLockedValue { s in
            s.waiting.filter { !apps.contains($0.delivery.target.app) }.map(\.due).min().map { max($0 - now, .zero) }
        }
    }

    /// Rows still waiting once the engine is done.
    func unsent() -> [ClaimedDelivery] { state.withLockedValue { $0.waiting.map(\.delivery) } }
    /// The outcomes written, by delivery.
    func outcomes() -> [Int64: DeliveryOutcome] { state.withLockedValue { $0.outcomes } }
    func payloadBytes(_ delivery: Int64) -> Int { state.withLockedValue { $0.payloadBytes[delivery] ?? 0 } }
}
extension HeraldJob {
    /// `herald send-test`: the APNs client lives as long as the test send.
    public func sendTest(client: Database, apns: APNsConfiguration, campaign: Int64,
                         to recipient: TestSendRecipient, variant: String? = nil,
                         stop: StopSignal = StopSignal()) async throws -> [TestSendAnswer] {
        let personalizer = try personalizer()
        let (options, apns) = try await withApps(client: client, options: try options(dryRun: false, stop: stop, apns: apns),
                                                 apns: apns)
        let apnsClient = try APNsClient(configuration: apns, logger: logger)
        let test = TestSend(stores: RunStores(client: client, logger: logger), options: options,
                            personalizer: personalizer, transport: apnsClient, logger: logger)
        return try await JobLifecycle.withAPNsClient(apnsClient, stop: stop, logger: logger) {
            try await test.send(campaign: campaign, to: recipient, variant: variant)
        }
    }

    /// `herald preview`.
    public func preview(client: Database, campaign: Int64) async throws -> CampaignPreview {
        let apps = try await AppStore(client: client, logger: logger).all()
        return try await CampaignPreview.make(stores: RunStores(client: client, logger: logger), campaign: campaign,
                                              apps: AppRoutes(apps: apps, defaultTopic: configuration.topic))
    }
}

/// Keeps what APNs answered to each notification (by `apns-id`), for a test
/// send's report.
final class AnsweringTransport: PushTransport, Sendable {
    private let base: any PushTransport
    private let answers = NIOLockedValueBox<[UUID: APNsResult]>([:])

    init(_ base: any PushTransport) { self.base = base }

    func send(_ notification: APNsNotification) async -> APNsResult {
        let result = await base.send(notification)
        answers.withLockedValue { $0[notification.apnsID] = result }
        return result
    }

    func shutdown() async { await base.shutdown() }
    var preferredExecutor: (any TaskExecutor)? { base.preferredExecutor }

    func result(for apnsID: UUID) -> APNsResult? { answers.withLockedValue { $0[apnsID] } }
}
