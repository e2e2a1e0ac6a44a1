import Crypto
import ExtensionKit
import Foundation

/// A new device key pair, for `herald keys device` (test devices, the demo).
/// Printing it shows no private bytes.
public struct DeviceKeyPair: Sendable, CustomStringConvertible, CustomReflectable {
    public let privateKey: Curve25519.KeyAgreement.PrivateKey
    public let publicKey: DeviceKey

    public init(privateKey: Curve25519.KeyAgreement.PrivateKey) {
        self.privateKey = privateKey
        publicKey = DeviceKey(publicKey: privateKey.publicKey)
    }

    public static func generate() -> DeviceKeyPair {
        DeviceKeyPair(privateKey: Curve25519.KeyAgreement.PrivateKey())
    }

    /// Standard base64 of the 32 raw private key bytes. Handle with care.
    public var privateKeyBase64: String { privateKey.rawRepresentation.base64EncodedString() }
    /// Standard base64 of the 32 raw public key bytes, as the app registers it.
    public var publicKeyBase64: String { publicKey.base64 }
    /// The key id envelopes sealed to this key carry.
    public var keyID: String { publicKey.keyID }

    public var description: String { "DeviceKeyPair(\(keyID), privateKey: <redacted>)" }
    public var customMirror: Mirror { Mirror(self, children: ["keyID": keyID], displayStyle: .struct) }
}
