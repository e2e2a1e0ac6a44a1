import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Which devices a test send goes to.
public enum TestSendRecipient: Sendable, Hashable {
    /// One device, by its APNs token.
    case device(token: String)
    /// Every valid device of a user, by the app's user id (`users.external_id`).
    case user(externalID: String)
}

/// The ledger's side of `herald send-test`: `deliveries` of kind 'test',
/// which belong to the campaign (their reply tokens work) but never count in
/// its figures, never block its real delivery to the device and never count
/// towards a frequency cap.
extension DeliveryLedger {
    /// Records one test delivery of `campaign` per device of `recipient`
    /// (devices invalidated, or of users who opted out, excepted) and
    /// returns them to send. Each row is written as `failed` ("no answer
    /// recorded") until `recordTestSend` writes what APNs answered, so a
    /// test send cut short never looks sent, and never enters a run's queue.
    /// `variant` is recorded on the rows (the variant whose text they carry).
    public func beginTestSend(campaign: Int64, to recipient: TestSendRecipient,
                              variant: String? = nil) async throws -> [ClaimedDelivery] {
        let token: String?
        let user: String?
        switch recipient {
        case .device(let t): (token, user) = (t, nil)
        case .user(let u): (token, user) = (nil, u)
        }
        try await AudienceStore(client: client, logger: logger).ensurePartition(campaign: campaign)
        let rows = try await client.query(try SQLQueries.named("ledger/begin-test-send").query([
            "campaign": .value(campaign), "variant": .value(variant), "token": .value(token), "user": .value(user),
        ]), logger: logger)
        var out: [ClaimedDelivery] = []
        for try await (id, deviceID, tok, env, locale, key, kid, apnsID, app) in rows.decode(
            (Int64, Int64, String, APNsEnvironment, String, String?, String?, UUID, String).self) {
            out.append(ClaimedDelivery(
                target: DeliveryTarget(deliveryID: id, deviceToken: tok, environment: env, locale: locale,
                                       publicKey: key, keyID: kid, apnsID: apnsID, variant: variant, app: app),
                deviceID: deviceID))
        }
        return out
    }

    /// Writes what became of one test delivery: `sent`, `invalid` (the
    /// device is then invalidated as a run would), `failed`, `skipped`, or
    /// `cancelled` for one given back unsent (`queued`, `retry`: APNs could
    /// not be reached in time; no run ever sends a test row).
    /// Names its campaign so that it reads that campaign's partition only.
    public func recordTestSend(_ outcome: DeliveryOutcome, campaign: Int64) async throws {
        let status = outcome.status == .queued || outcome.status == .retry ? "cancelled" : outcome.status.rawValue
        try await client.query("""
            UPDATE deliveries SET status = \(status), last_error = \(outcome.error),
                attempts = attempts + \(Int32(clamping: outcome.attempts)),
                sent_at = CASE WHEN \(outcome.status.rawValue) = 'sent' THEN now() END, updated_at = now()
            WHERE campaign_id = \(campaign) AND id = \(outcome.deliveryID) AND kind = 'test'
            """, logger: logger)
        if outcome.status == .invalid {
            let since = (outcome.invalidSince ?? Date()).timeIntervalSince1970
            try await client.query("""
                UPDATE devices SET invalidated_at = to_timestamp(\(since)), invalid_reason = \(outcome.error ?? "invalid")
                WHERE id = \(outcome.deviceID) AND invalidated_at IS NULL
                  AND (registered_at IS NULL OR registered_at <= to_timestamp(\(since)))
                """, logger: logger)
        }
    }
}
