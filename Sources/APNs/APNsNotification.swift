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

/// What became of one notification.
public struct APNsResult: Sendable, Hashable {
    public var outcome: APNsOutcome
    /// Requests that counted against the retry budget (0 when refused before sending).
    public var attempts: Int
    /// Every re-send, including those after a GOAWAY that left the request unprocessed
    /// (which do not count as attempts).
    public var retried: Int

    public init(outcome: APNsOutcome, attempts: Int, retried: Int) {
        self.outcome = outcome
        self.attempts = attempts
        self.retried = retried
    }
}

public enum APNsOutcome: Sendable, Hashable {
    /// APNs accepted the notification (200).
    case sent(apnsID: UUID)
    /// The device token must not be used again: 410 Unregistered (with Apple's timestamp),
    /// 400 BadDeviceToken, 400 DeviceTokenNotForTopic.
    case deviceInvalid(reason: APNsReason, timestamp: Date?)
    /// Any other refusal, or retryable errors once the attempts are used up.
    /// `status` is nil when no HTTP answer was had (connection errors, timeouts, local checks).
    case failed(status: Int?, reason: APNsReason)
}

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

/// What an answer means for the notification it answers: the one
/// classification that the client's immediate retries and the run's ledger
/// (Runner's `DeliveryPolicy`) both follow.
public enum APNsVerdict: Sendable, Hashable {
    /// Accepted (200).
    case sent
    /// The token must never be targeted again (410, BadDeviceToken, DeviceTokenNotForTopic).
    case deviceInvalid
    /// Never for this notification (another 4xx): recorded as failed.
    case refused
    /// Refused for the provider itself (credentials, key, team, topic):
    /// every later notification would be refused the same way.
    case providerRefused
    /// Not now (429, 5xx, a lost or refused connection, a timeout): sent
    /// again later. `connection` when no HTTP answer was had, which is what
    /// a circuit breaker counts.
    case transient(connection: Bool)
    /// Ended by this process's own stop before an answer: its fate is unknown.
    case stoppedHere

    /// The verdict on an HTTP status (nil: none was had) and APNs' reason.
    public static func of(status: Int?, reason: APNsReason) -> APNsVerdict {
        if status == 200 { return .sent }
        if reason == .clientShutdown { return .stoppedHere }
        if status == 410 || reason.marksDeviceInvalid { return .deviceInvalid }
        if reason.isFatalForRun { return .providerRefused }
        if let status, [429, 500, 502, 503, 504].contains(status) { return .transient(connection: false) }
        switch reason {
        case .connectionFailed, .timeout, .idleTimeout, .shutdown:
            return .transient(connection: status == nil)
        case .tooManyRequests, .internalServerError, .serviceUnavailable, .expiredProviderToken,
             .tooManyProviderTokenUpdates:
            return .transient(connection: false)
        default:
            return .refused
        }
    }
}

extension APNsResult {
    /// The verdict on this result (see `APNsVerdict.of`).
    var verdict: APNsVerdict {
        switch outcome {
        case .sent: .sent
        case .deviceInvalid: .deviceInvalid
        case .failed(let status, let reason): APNsVerdict.of(status: status, reason: reason)
        }
    }
}
