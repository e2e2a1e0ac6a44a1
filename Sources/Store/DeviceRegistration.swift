import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What an app registers for one device token (DESIGN, contract 6), already
/// checked. Optional fields left nil keep what the device had.
public struct DeviceRegistration: Sendable, Hashable {
    public var token: String
    public var environment: APNsEnvironment
    /// The app's external user id (`users.external_id`).
    public var user: String
    public var locale: String?
    public var timeZone: String?
    public var appVersion: String?
    /// Base64 of the raw X25519 key, with its key id; both or neither.
    public var publicKey: String?
    public var keyID: String?
    /// Merged into the user's attributes.
    public var attributes: [String: JSONValue]?
    /// false: the user opted out of campaigns; true: opted back in; nil: unchanged.
    public var marketing: Bool?
    public var configETag: String?
    /// The app whose backend registers it (`apps.name`; from the token's `aud`).
    public var app: String = AppRecord.defaultName

    public init(token: String, environment: APNsEnvironment, user: String, locale: String? = nil, timeZone: String? = nil,
                appVersion: String? = nil, publicKey: String? = nil, keyID: String? = nil,
                attributes: [String: JSONValue]? = nil, marketing: Bool? = nil, configETag: String? = nil) {
        self.token = token
        self.environment = environment
        self.user = user
        self.locale = locale
        self.timeZone = timeZone
        self.appVersion = appVersion
        self.publicKey = publicKey
        self.keyID = keyID
        self.attributes = attributes
        self.marketing = marketing
        self.configETag = configETag
    }
}
