import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A claimed config refresh push.
public struct ClaimedRefresh: Sendable, Hashable {
    public var deliveryID: Int64
    public var deviceID: Int64
    public var deviceToken: String
    public var environment: APNsEnvironment
    public var etag: String
    public var apnsID: UUID
    /// Epoch seconds after which APNs may drop the push (the campaign is over by then).
    public var expiration: Int?
    /// Attempts recorded before this claim (the retry backoff grows with them).
    public var attempts: Int = 0
    /// The device's app (its topic and credential).
    public var app: String = AppRecord.defaultName
}
