import Crypto
import Foundation

/// The provider's token-signing key: a P-256 private key from Apple's `.p8` (PKCS#8 PEM).
/// Its description never shows the key.
public struct APNsSigningKey: Sendable, CustomStringConvertible {
    let privateKey: P256.Signing.PrivateKey

    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
    }

    /// Parses a PKCS#8 PEM. The error does not echo the content.
    public init(pem: String) throws {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw APNsConfigurationError.keyInvalid(path: nil)
        }
        self.privateKey = key
    }

    /// Reads and parses a `.p8` file. The error names the path, never the content.
    /// A file that users other than its owner may read or write is refused:
    /// the key signs for the whole team, so it must be `chmod 600`.
    public init(pemPath: String) throws {
        // The file's own mode, through symlinks (Kubernetes mounts secrets as links).
        let target = URL(fileURLWithPath: pemPath).resolvingSymlinksInPath().path
        if let mode = (try? FileManager.default.attributesOfItem(atPath: target))?[.posixPermissions] as? NSNumber,
           mode.intValue & 0o077 != 0 {
            throw APNsConfigurationError.keyFileTooOpen(path: pemPath, mode: mode.intValue & 0o777)
        }
        guard let data = FileManager.default.contents(atPath: pemPath) else {
            throw APNsConfigurationError.keyFileUnreadable(path: pemPath)
        }
        guard let pem = String(data: data, encoding: .utf8),
            let key = try? P256.Signing.PrivateKey(pemRepresentation: pem)
        else {
            throw APNsConfigurationError.keyInvalid(path: pemPath)
        }
        self.privateKey = key
    }

    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    public var description: String { "APNsSigningKey(<redacted>)" }
}

/// Builds ES256 provider tokens (JWT) for APNs.
package enum ProviderTokenSigner {
    static func makeToken(key: APNsSigningKey, keyID: String, teamID: String, issuedAt: Date) throws -> String {
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let header = "{\"alg\":\"ES256\",\"kid\":\"\(jsonEscaped(keyID))\"}"
        let claims = "{\"iss\":\"\(jsonEscaped(teamID))\",\"iat\":\(iat)}"
        let signingInput = base64URL(Array(header.utf8)) + "." + base64URL(Array(claims.utf8))
        let signature = try key.privateKey.signature(for: Array(signingInput.utf8))
        return signingInput + "." + base64URL(Array(signature.rawRepresentation))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
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
