import Crypto
import Foundation

/// A notification the simulator accepted (answered 200).
public struct AcceptedNotification: Sendable, Hashable {
    public var deviceToken: String
    /// Request headers, lowercase names (pseudo-headers included).
    public var headers: [String: String]
    public var payload: [UInt8]
    /// The `apns-id` answered (the request's, or one the simulator made).
    public var apnsID: String
    /// Which connection (1, 2, …) carried it.
    public var connection: Int
    /// The broadcast channel it came on (nil: sent to this device's token).
    public var channel: String? = nil
}
