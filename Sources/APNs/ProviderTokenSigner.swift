import Crypto
import Foundation
import HeraldCore

/// Builds ES256 provider tokens (JWT) for APNs.
package enum ProviderTokenSigner {
    static func makeToken(key: APNsSigningKey, keyID: String, teamID: String, issuedAt: Date) throws -> String {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let header = "{\"alg\":\"ES256\",\"kid\":\"\(jsonEscaped(keyID))\"}"
        let claims = "{\"iss\":\"\(jsonEscaped(teamID))\",\"iat\":\(iat)}"
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try key.privateKey.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// The text of a JSON string literal, without its quotes (the simulator's log uses it too).
    package static func jsonEscaped(_ value: String) -> String {
        var out = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
