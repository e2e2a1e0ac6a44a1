import ExtensionKit
import HeraldCore
import Store

/// The reply loop's part of each payload: the delivery's reply token, and
/// the campaign's sensitive fields sealed to the device's own key. A device
/// without a usable key never gets those fields: its delivery is skipped.
public struct ReplyLoopPersonalizer: DeliveryPersonalizer {
    public let tokens: ReplyTokens

    public init(tokens: ReplyTokens) {
        self.tokens = tokens
    }

    public func extras(for prepared: PreparedCampaign, target: DeliveryTarget,
                       sealing fields: [UInt8]?) -> Result<(replyToken: String?, sealed: SealedEnvelope?), CampaignProblem> {
        let token = tokens.token(delivery: target.deliveryID)
        guard let fields else { return .success((token, nil)) }
        guard let key = target.publicKey, let keyID = target.keyID else {
            return .failure(CampaignProblem(AudienceStore.noKey))
        }
        do {
            let envelope = try Sealer.seal(fields: fields, to: try DeviceKey.publicKey(base64: key), keyID: keyID,
                                           campaign: prepared.campaign.id, delivery: target.deliveryID)
            return .success((token, envelope))
        } catch {
            return .failure(CampaignProblem("device key unusable for sealing: \(error)"))
        }
    }
}
