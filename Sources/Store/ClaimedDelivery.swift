import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A claimed delivery: who it goes to and what APNs id it carries.
public struct ClaimedDelivery: Sendable, Hashable {
    public var target: DeliveryTarget
    public var deviceID: Int64
    /// Attempts recorded before this claim (the retry backoff grows with them).
    public var attempts: Int = 0
    /// A batch row's span (`delivery_spans`); nil: claimed row by row.
    public var span: SpanClaim?
    /// Why a batch row is skipped rather than sent (its device or user changed since the snapshot).
    public var skip: String?

    public init(target: DeliveryTarget, deviceID: Int64, attempts: Int = 0) {
        self.target = target
        self.deviceID = deviceID
        self.attempts = attempts
    }
}
