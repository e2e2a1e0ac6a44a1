import Foundation
import HeraldCore

/// Apple's reason strings, plus the connection-level reasons of this client.
public enum APNsReason: Sendable, Hashable, CustomStringConvertible {
    case badCollapseID
    case badDeviceToken
    case badExpirationDate
    case badMessageID
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIDInToken
    /// Apple: the key id of the token is not valid for the environment (sandbox or production).
    case badEnvironmentKeyIdInToken
    case badPath
    case methodNotAllowed
    case expiredToken
    case unregistered
    case payloadTooLarge
    case tooManyProviderTokenUpdates
    case tooManyRequests
    case internalServerError
    case serviceUnavailable
    case shutdown
    /// The connection could not be opened, or was lost with the request in flight.
    case connectionFailed
    /// The per-request deadline passed before an answer arrived.
    case timeout
    /// The client was shut down before the request could complete.
    case clientShutdown
    /// The notification's credential is a client certificate past its `notAfter` (refused here,
    /// without connecting).
    case certificateExpired
    /// The notification names a credential the configuration does not have.
    case unknownCredential
    /// A reason string this client does not know.
    case unknown(String)

    private static let table: [(APNsReason, String)] = [
        (.badCollapseID, "BadCollapseId"),
        (.badDeviceToken, "BadDeviceToken"),
        (.badExpirationDate, "BadExpirationDate"),
        (.badMessageID, "BadMessageId"),
        (.badPriority, "BadPriority"),
        (.badTopic, "BadTopic"),
        (.deviceTokenNotForTopic, "DeviceTokenNotForTopic"),
        (.duplicateHeaders, "DuplicateHeaders"),
        (.idleTimeout, "IdleTimeout"),
        (.invalidPushType, "InvalidPushType"),
        (.missingDeviceToken, "MissingDeviceToken"),
        (.missingTopic, "MissingTopic"),
        (.payloadEmpty, "PayloadEmpty"),
        (.topicDisallowed, "TopicDisallowed"),
        (.badCertificate, "BadCertificate"),
        (.badCertificateEnvironment, "BadCertificateEnvironment"),
        (.expiredProviderToken, "ExpiredProviderToken"),
        (.forbidden, "Forbidden"),
        (.invalidProviderToken, "InvalidProviderToken"),
        (.missingProviderToken, "MissingProviderToken"),
        (.unrelatedKeyIDInToken, "UnrelatedKeyIdInToken"),
        (.badEnvironmentKeyIdInToken, "BadEnvironmentKeyIdInToken"),
        (.badPath, "BadPath"),
        (.methodNotAllowed, "MethodNotAllowed"),
        (.expiredToken, "ExpiredToken"),
        (.unregistered, "Unregistered"),
        (.payloadTooLarge, "PayloadTooLarge"),
        (.tooManyProviderTokenUpdates, "TooManyProviderTokenUpdates"),
        (.tooManyRequests, "TooManyRequests"),
        (.internalServerError, "InternalServerError"),
        (.serviceUnavailable, "ServiceUnavailable"),
        (.shutdown, "Shutdown"),
        (.connectionFailed, "connectionFailed"),
        (.timeout, "timeout"),
        (.clientShutdown, "clientShutdown"),
        (.certificateExpired, "CertificateExpired"),
        (.unknownCredential, "UnknownCredential"),
    ]

    private static let byString: [String: APNsReason] = {
        var map: [String: APNsReason] = [:]
        for (reason, raw) in table { map[raw] = reason }
        return map
    }()

    /// Maps Apple's reason string; unknown strings become `.unknown(raw)`.
    public init(string: String) {
        self = Self.byString[string] ?? .unknown(string)
    }

    /// Apple's spelling (or this client's, for the connection-level reasons).
    public var rawValue: String {
        if case .unknown(let raw) = self { return raw }
        for (reason, raw) in Self.table where reason == self { return raw }
        return "unknown"
    }

    public var description: String { rawValue }

    /// True when every later notification of the run would fail the same way
    /// (credentials, key, certificate, team, topic): the runner should stop instead of sending on.
    /// Forbidden and BadTopic stay here too: Apple answers them for the provider's setup, not for
    /// one notification.
    public var isFatalForRun: Bool {
        switch self {
        case .invalidProviderToken, .missingProviderToken, .badCertificate, .badCertificateEnvironment,
            .badEnvironmentKeyIdInToken, .unrelatedKeyIDInToken, .topicDisallowed, .certificateExpired,
            .unknownCredential, .forbidden, .badTopic:
            return true
        default:
            return false
        }
    }

    /// True when the device token must not be targeted again.
    public var marksDeviceInvalid: Bool {
        switch self {
        case .unregistered, .badDeviceToken, .deviceTokenNotForTopic: return true
        default: return false
        }
    }
}
