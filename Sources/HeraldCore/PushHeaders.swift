import ExtensionKit
import Foundation

/// The APNs request headers of one delivery (DESIGN, contract 1).
public struct PushHeaders: Sendable, Hashable {
    public var topic: String
    public var pushType: String
    public var priority: Int
    /// Epoch seconds; nil lets APNs store the notification for its default period.
    public var expiration: Int?
    public var collapseID: String
    public var apnsID: UUID

    public init(topic: String, pushType: String, priority: Int, expiration: Int?, collapseID: String, apnsID: UUID) {
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// The headers as APNs receives them, in a fixed order.
    public var fields: [(name: String, value: String)] {
        var f: [(String, String)] = [
            ("apns-topic", topic), ("apns-push-type", pushType), ("apns-priority", String(priority)),
        ]
        if let expiration { f.append(("apns-expiration", String(expiration))) }
        f.append(("apns-collapse-id", collapseID))
        f.append(("apns-id", apnsID.uuidString.lowercased()))
        return f
    }
}
