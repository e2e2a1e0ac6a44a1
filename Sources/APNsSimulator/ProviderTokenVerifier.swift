import Crypto
import Foundation
import HeraldCore
import NIOHPACK

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
            let headerBytes = Base64URL.decode(parts[0]),
            let claimsBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
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
}
