import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What became of one delivery, to be written with others in one statement.
public struct DeliveryOutcome: Sendable, Hashable {
    public enum Status: String, Sendable {
        case sent, invalid, failed, skipped
        /// Given back unsent: queued again as it was (after `delay`).
        case queued
        /// A transient answer (429, 5xx, a lost connection, a timeout):
        /// queued again after `delay`, the run's backoff.
        case retry
    }

    public var deliveryID: Int64
    public var deviceID: Int64
    public var status: Status
    public var error: String?
    public var attempts: Int
    /// For `invalid`: when APNs says the token stopped being valid.
    public var invalidSince: Date?
    /// For `queued` and `retry`: the least wait before it is claimed again, in seconds.
    public var delay: Double

    public init(deliveryID: Int64, deviceID: Int64, status: Status, error: String? = nil,
                attempts: Int = 1, invalidSince: Date? = nil, delay: Double = 0) {
        self.deliveryID = deliveryID
        self.deviceID = deviceID
        self.status = status
        self.error = error
        self.attempts = attempts
        self.invalidSince = invalidSince
        self.delay = delay
    }
}
