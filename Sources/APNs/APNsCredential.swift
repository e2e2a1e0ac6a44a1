import Foundation
import NIOSSL
import SwiftASN1
import X509

/// How the client proves to APNs that it may push to an app: a provider token signed with a
/// team's `.p8` key, or a TLS client certificate that Apple issued for the app's bundle id.
/// `description` never shows key material.
public enum APNsCredential: Sendable, CustomStringConvertible {
    case token(signingKey: APNsSigningKey, keyID: String, teamID: String)
    case certificate(APNsClientCertificate)

    public var description: String {
        switch self {
        case .token(_, let keyID, let teamID):
            return "token(keyID: \(keyID), teamID: \(teamID), signingKey: <redacted>)"
        case .certificate(let certificate):
            return "certificate(\(certificate))"
        }
    }
}
