import Foundation
import HeraldCore

/// What an answer means for the notification it answers: the one
/// classification that the client's immediate retries and the run's ledger
/// (Runner's `DeliveryPolicy`) both follow.
public enum APNsVerdict: Sendable, Hashable {
    /// Accepted (200).
    case sent
    /// The token must never be targeted again (410, BadDeviceToken, DeviceTokenNotForTopic).
    case deviceInvalid
    /// Never for this notification (another 4xx): recorded as failed.
    case refused
    /// Refused for the provider itself (credentials, key, team, topic):
    /// every later notification would be refused the same way.
    case providerRefused
    /// Not now (429, 5xx, a lost or refused connection, a timeout): sent
    /// again later. `connection` when no HTTP answer was had, which is what
    /// a circuit breaker counts.
    case transient(connection: Bool)
    /// Ended by this process's own stop before an answer: its fate is unknown.
    case stoppedHere

    /// The verdict on an HTTP status (nil: none was had) and APNs' reason.
    public static func of(status: Int?, reason: APNsReason) -> APNsVerdict {
        if status == 200 { return .sent }
        if reason == .clientShutdown { return .stoppedHere }
        if status == 410 || reason.marksDeviceInvalid { return .deviceInvalid }
        if reason.isFatalForRun { return .providerRefused }
        if let status, [429, 500, 502, 503, 504].contains(status) { return .transient(connection: false) }
        switch reason {
        case .connectionFailed, .timeout, .idleTimeout, .shutdown:
            return .transient(connection: status == nil)
        case .tooManyRequests, .internalServerError, .serviceUnavailable, .expiredProviderToken,
             .tooManyProviderTokenUpdates:
            return .transient(connection: false)
        default:
            return .refused
        }
    }
}
