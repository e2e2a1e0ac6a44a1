import Foundation

/// One device of a campaign's audience, as the payload builder sees it.
public struct DeliveryTarget: Sendable, Hashable {
    public var deliveryID: Int64
    public var deviceToken: String
    public var environment: APNsEnvironment
    public var locale: String
    public var publicKey: String?
    public var keyID: String?
    public var apnsID: UUID
    /// The campaign variant recorded on the delivery (nil: the campaign has none).
    public var variant: String?
    /// The app the device belongs to (`apps.name`): its topic and credential.
    public var app: String
    /// Its values of the variables the campaign's templates name (nil: the
    /// campaign has none, or they were not read).
    public var personal: PersonalValues?
    /// The Live Activity token a sale's step goes to instead of `deviceToken`: the device's
    /// push-to-start token (the start; nil: the device gets the alert), or its activity's update
    /// token (an update or the end).
    public var activityToken: String?

    public init(deliveryID: Int64, deviceToken: String, environment: APNsEnvironment, locale: String,
                publicKey: String? = nil, keyID: String? = nil, apnsID: UUID = UUID(), variant: String? = nil,
                app: String = "default", personal: PersonalValues? = nil) {
        self.deliveryID = deliveryID
        self.deviceToken = deviceToken
        self.environment = environment
        self.locale = locale
        self.publicKey = publicKey
        self.keyID = keyID
        self.apnsID = apnsID
        self.variant = variant
        self.app = app
        self.personal = personal
    }
}
