import Crypto
import Foundation
import NIOHPACK

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
