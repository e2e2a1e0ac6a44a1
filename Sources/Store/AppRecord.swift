import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// An app as the database holds it (`apps`, `app_credentials`): its topic, its APNs
/// credentials (the files that hold them, never key material) and the
/// public keys that verify its backend's registration tokens.
public struct AppRecord: Sendable, Hashable {
    public static let defaultName = "default"

    public var name: String
    public var displayName: String
    /// The bundle id; nil for `default` (then the APNS_TOPIC setting).
    public var topic: String?
    public var registrationKeys: [String]
    public var credentials: [AppCredentialRecord]
    /// The credential to send with, per environment (`production`, `sandbox`):
    /// the newest not retired for it (nil: none).
    public var current: [APNsEnvironment: String]

    public init(name: String, displayName: String, topic: String?, registrationKeys: [String] = [],
                credentials: [AppCredentialRecord] = [], current: [APNsEnvironment: String] = [:]) {
        self.name = name
        self.displayName = displayName
        self.topic = topic
        self.registrationKeys = registrationKeys
        self.credentials = credentials
        self.current = current
    }
}
