import Foundation
import HeraldCore

public enum APNsOutcome: Sendable, Hashable {
    /// APNs accepted the notification (200).
    case sent(apnsID: UUID)
    /// The device token must not be used again: 410 Unregistered (with Apple's timestamp),
    /// 400 BadDeviceToken, 400 DeviceTokenNotForTopic.
    case deviceInvalid(reason: APNsReason, timestamp: Date?)
    /// Any other refusal, or retryable errors once the attempts are used up.
    /// `status` is nil when no HTTP answer was had (connection errors, timeouts, local checks).
    case failed(status: Int?, reason: APNsReason)
}
