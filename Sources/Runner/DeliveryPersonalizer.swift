import ExtensionKit
import HeraldCore

/// Where a dry run writes its JSON lines.
public protocol PayloadSink: Sendable {
    func write(_ line: [UInt8]) async throws
}

/// Per-device parts of a payload: the reply token and the sealed envelope.
public protocol DeliveryPersonalizer: Sendable {
    /// The reply token and envelope of one delivery, or why it cannot be sent.
    func extras(for prepared: PreparedCampaign, target: DeliveryTarget) -> Result<(replyToken: String?, sealed: SealedEnvelope?), CampaignProblem>
}
