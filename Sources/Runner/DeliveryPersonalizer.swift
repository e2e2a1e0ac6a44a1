import ExtensionKit
import HeraldCore

/// Where a dry run writes its JSON lines.
public protocol PayloadSink: Sendable {
    func write(_ line: [UInt8]) async throws
}

/// Per-device parts of a payload: the reply token and the sealed envelope.
public protocol DeliveryPersonalizer: Sendable {
    /// The reply token and envelope of one delivery, or why it cannot be
    /// sent. `fields` are the sensitive fields to seal to the device, as its
    /// templates made them (nil: the campaign has none).
    func extras(for prepared: PreparedCampaign, target: DeliveryTarget,
                sealing fields: [UInt8]?) -> Result<(replyToken: String?, sealed: SealedEnvelope?), CampaignProblem>
}
