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
