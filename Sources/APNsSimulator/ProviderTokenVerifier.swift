import Crypto
import Foundation
import NIOHPACK

/// The verdict on one request: status and Apple's reason (nil for 200).
struct Verdict {
    var status: Int
    var reason: String?
    var timestampMilliseconds: Int64?
    /// Headers and a JSON body of a success (the channel management API's).
    var headers: [(String, String)] = []
    var body: String?
    /// What the simulator counts a refusal under: the reason, or what exactly was wrong.
    var detail: String?
    /// The broadcast and channel endpoints answer `apns-request-id`, the device endpoint `apns-id`.
    var requestIDHeader = false

    static func reject(_ status: Int, _ reason: String) -> Verdict { Verdict(status: status, reason: reason) }
    static func badPayload(_ detail: String) -> Verdict { Verdict(status: 400, reason: "BadPayload", detail: "BadPayload: " + detail) }
}

/// Claims of a provider token whose signature verified.
struct VerifiedToken {
    var jwt: String
    var keyID: String
    var issuedAt: Int64
    /// The `iss` claim, which the key's team matched.
    var teamID: String = ""
}

/// Who may push to what: each team's signing keys, the token and certificate apps, and what was
/// revoked. Lives on the simulator's event loop (the runtime controls change it).
struct AuthRegistry {
    /// Key id → its team and public key.
    var keys: [String: (teamID: String, key: P256.Signing.PublicKey)] = [:]
    var revokedKeys: Set<String> = []
    /// Topic → the team whose provider tokens may push to it.
    var tokenTopics: [String: String] = [:]
    /// Topics of apps with certificate authentication.
    var certificateTopics: Set<String> = []
    /// Serial numbers (lowercase hex) of revoked client certificates.
    var revokedCertificates: Set<String> = []

    /// `teamID`, `signingKeys` and `allowedTopics` make one token team; `apps` add to it.
    init(_ configuration: SimulatorConfiguration) {
        for (keyID, key) in configuration.signingKeys { keys[keyID] = (configuration.teamID, key) }
        revokedCertificates = Set(configuration.revokedCertificateSerials.map { $0.lowercased() })
        for topic in configuration.allowedTopics { tokenTopics[topic] = configuration.teamID }
        for app in configuration.apps {
            switch app.auth {
            case .token(let teamID, let appKeys):
                tokenTopics[app.topic] = teamID
                for (keyID, key) in appKeys { keys[keyID] = (teamID, key) }
            case .certificate:
                certificateTopics.insert(app.topic)
            }
        }
    }

    mutating func trust(keyID: String, publicKey: P256.Signing.PublicKey, teamID: String) {
        keys[keyID] = (teamID, publicKey)
        revokedKeys.remove(keyID)
    }

    /// The team and key of a key id that is trusted and not revoked.
    func key(_ keyID: String) -> (teamID: String, key: P256.Signing.PublicKey)? {
        revokedKeys.contains(keyID) ? nil : keys[keyID]
    }
}

enum ProviderTokenVerifier {
    enum Failure: Error { case invalid, missing }

    /// Verifies the ES256 signature, `alg`, `kid` and `iss`. Time rules are checked by the caller.
    static func verify(
        authorization: String,
        teamID: String,
        keys: [String: P256.Signing.PublicKey]
    ) -> Result<VerifiedToken, Failure> {
        verify(authorization: authorization) { keyID in keys[keyID].map { (teamID, $0) } }
    }

    /// Verifies with the key `lookup` gives for the token's `kid`, and that `iss` is its team.
    static func verify(
        authorization: String,
        lookup: (String) -> (teamID: String, key: P256.Signing.PublicKey)?
    ) -> Result<VerifiedToken, Failure> {
        let prefix = "bearer "
        guard authorization.count > prefix.count, authorization.prefix(prefix.count).lowercased() == prefix else {
            return .failure(.invalid)
        }
        let jwt = String(authorization.dropFirst(prefix.count))
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = base64URLDecode(parts[0]),
            let claimsBytes = base64URLDecode(parts[1]),
            let signatureBytes = base64URLDecode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerBytes) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsBytes) as? [String: Any],
            header["alg"] as? String == "ES256",
            let keyID = header["kid"] as? String,
            let issuer = claims["iss"] as? String,
            let iatNumber = claims["iat"] as? NSNumber
        else {
            return .failure(.invalid)
        }
        guard let (teamID, key) = lookup(keyID), issuer == teamID,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else {
            return .failure(.invalid)
        }
        return .success(VerifiedToken(jwt: jwt, keyID: keyID, issuedAt: iatNumber.int64Value, teamID: teamID))
    }

    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = base64.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { base64 += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: base64)
    }
}

enum HeaderRules {
    static let validPushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "controls", "widgets",
    ]
    static let singleValued: [String] = [
        ":method", ":path", "authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration",
        "apns-collapse-id", "apns-id",
    ]

    static func isHexToken(_ token: Substring) -> Bool {
        token.utf8.count >= 64
            && token.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
    }

    static func isUUID(_ text: String) -> Bool {
        UUID(uuidString: text) != nil
    }

    /// The `aps` dictionary of a JSON object (nil: not a notification object).
    static func aps(_ body: [UInt8]) -> [String: Any]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        return object["aps"] as? [String: Any]
    }
}
