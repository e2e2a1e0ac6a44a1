import Foundation
import HeraldCore

/// One notification to send: headers of Contract 1 plus an already-built JSON payload.
public struct APNsNotification: Sendable {
    /// The device token, hex encoded.
    public var deviceToken: String
    public var environment: APNsEnvironment
    public var pushType: String
    /// 10 (deliver now) or 5 (power considerate).
    public var priority: Int
    /// `apns-expiration`, epoch seconds. `nil` leaves the header out.
    public var expiration: Int?
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?
    /// `apns-id`, recorded in the ledger.
    public var apnsID: UUID
    /// Overrides `APNsConfiguration.topic` when set.
    public var topic: String?
    /// The JSON payload, at most 4096 bytes.
    public var payload: [UInt8]
    /// The name of the credential to send with (`APNsConfiguration.credentials`); nil: the
    /// configuration's default credential.
    public var credential: String?
    /// At most this many attempts, when fewer than the retry policy allows
    /// (1: a paced send, whose every attempt must take a slot of its pace).
    public var maxAttempts: Int?

    public init(
        deviceToken: String,
        environment: APNsEnvironment = .production,
        pushType: String = "alert",
        priority: Int = 10,
        expiration: Int? = nil,
        collapseID: String? = nil,
        apnsID: UUID = UUID(),
        topic: String? = nil,
        payload: [UInt8],
        credential: String? = nil
    ) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.topic = topic
        self.payload = payload
        self.credential = credential
    }

    /// APNs refuses payloads larger than this (alert pushes).
    public static let maximumPayloadSize = 4096
    /// APNs refuses collapse ids longer than this, in bytes.
    public static let maximumCollapseIDSize = 64
}
