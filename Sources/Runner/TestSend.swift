import APNs
import ExtensionKit
import Foundation
import HeraldCore
import Logging
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
/// through the run's own builder, personalizer (reply token, sealed fields)
/// and APNs client, recorded in the ledger as a test (Sql/0008).
public struct TestSend: Sendable {
    public let store: CampaignStore
    public let topic: String
    public let personalizer: any DeliveryPersonalizer
    public let transport: any PushTransport

    public init(store: CampaignStore, topic: String, personalizer: any DeliveryPersonalizer, transport: any PushTransport) {
        self.store = store
        self.topic = topic
        self.personalizer = personalizer
        self.transport = transport
    }

    /// Sends campaign `id` to `recipient`: the text of `variant` when the
    /// campaign has variants (the first by name when nil). Throws
    /// `CampaignProblem` when a run would fail the campaign, the variant is
    /// not one of the campaign's, or no device matches.
    public func send(campaign id: Int64, to recipient: TestSendRecipient, variant: String? = nil) async throws -> [TestSendAnswer] {
        let due = try await store.loadCampaign(id)
        let prepared = try PreparedCampaign(campaign: due.campaign, segmentName: due.segmentName, segmentRule: due.segmentRule)
        let chosen = try Self.variant(variant, of: due.campaign)
        let deliveries = try await store.beginTestSend(campaign: id, to: recipient, variant: chosen)
        guard !deliveries.isEmpty else {
            switch recipient {
            case .device:
                throw CampaignProblem("no such device: the token is not registered, was invalidated, or its user opted out")
            case .user(let user):
                throw CampaignProblem("user \"\(user)\" has no device to send to (unknown user, opted out, or no valid device)")
            }
        }
        var answers: [TestSendAnswer] = []
        for delivery in deliveries {
            let target = delivery.target
            var answer = TestSendAnswer(deliveryID: target.deliveryID, deviceToken: target.deviceToken,
                                        locale: prepared.builder.campaign(variant: chosen).contentLocale(for: target.locale),
                                        variant: chosen, status: "skipped",
                                        httpStatus: nil, apnsID: target.apnsID, reason: nil, payloadBytes: 0)
            let outcome: DeliveryOutcome
            switch personalizer.extras(for: prepared, target: target) {
            case .failure(let problem):
                answer.reason = problem.message
                outcome = DeliveryOutcome(deliveryID: target.deliveryID, deviceID: delivery.deviceID, status: .skipped,
                                          error: problem.message, attempts: 0)
            case .success(let extras):
                let payload = prepared.builder.payload(for: target, replyToken: extras.replyToken, sealed: extras.sealed)
                let headers = prepared.builder.headers(for: target, topic: topic)
                answer.payloadBytes = payload.count
                let result = await transport.send(APNsNotification(
                    deviceToken: target.deviceToken,
                    environment: target.environment == "sandbox" ? .sandbox : .production,
                    pushType: headers.pushType, priority: headers.priority, expiration: headers.expiration,
                    collapseID: headers.collapseID, apnsID: headers.apnsID, topic: headers.topic,
                    payload: payload))
                switch result.outcome {
                case .sent(let apnsID):
                    answer.status = "sent"
                    answer.httpStatus = 200
                    answer.apnsID = apnsID
                    outcome = DeliveryOutcome(deliveryID: target.deliveryID, deviceID: delivery.deviceID, status: .sent,
                                              attempts: result.attempts)
                case .deviceInvalid(let reason, let timestamp):
                    answer.status = "invalid"
                    // APNs answers 410 for a token no longer valid, 400 for a bad one.
                    answer.httpStatus = (reason == .unregistered || reason == .expiredToken) ? 410 : 400
                    answer.reason = reason.description
                    outcome = DeliveryOutcome(deliveryID: target.deliveryID, deviceID: delivery.deviceID, status: .invalid,
                                              error: reason.description, attempts: result.attempts, invalidSince: timestamp)
                case .failed(let status, let reason):
                    answer.status = "failed"
                    answer.httpStatus = status
                    answer.reason = reason.description
                    outcome = DeliveryOutcome(deliveryID: target.deliveryID, deviceID: delivery.deviceID, status: .failed,
                                              error: "test send: \(reason.description)", attempts: result.attempts)
                }
            }
            try await store.recordTestSend(outcome, campaign: id)
            answers.append(answer)
        }
        return answers
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

extension HeraldJob {
    /// `herald send-test`: the APNs client lives as long as the test send.
    public func sendTest(client: PostgresClient, apns: APNsConfiguration, campaign: Int64,
                         to recipient: TestSendRecipient, variant: String? = nil) async throws -> [TestSendAnswer] {
        let personalizer = try personalizer()
        let apnsClient = try APNsClient(configuration: apns, logger: logger)
        let test = TestSend(store: CampaignStore(client: client, logger: logger), topic: configuration.topic,
                            personalizer: personalizer, transport: apnsClient)
        return try await withThrowingTaskGroup(of: [TestSendAnswer]?.self) { group in
            group.addTask {
                try await apnsClient.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await test.send(campaign: campaign, to: recipient, variant: variant)
        }
    }

    /// `herald preview`.
    public func preview(client: PostgresClient, campaign: Int64) async throws -> CampaignPreview {
        try await CampaignPreview.make(store: CampaignStore(client: client, logger: logger), campaign: campaign,
                                       topic: configuration.topic)
    }
}
