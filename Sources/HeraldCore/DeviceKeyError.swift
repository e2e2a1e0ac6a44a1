import Crypto
import ExtensionKit
import Foundation

/// Why a device public key was refused. The description never echoes the key.
public struct DeviceKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case notBase64
        case wrongLength(byteCount: Int)
        case smallOrder
    }

    private let code: Code

    /// The key text is not standard base64.
    public static let notBase64 = Self(code: .notBase64)
    /// The key does not decode to the 32 bytes of a raw X25519 public key.
    public static func wrongLength(byteCount: Int) -> Self { Self(code: .wrongLength(byteCount: byteCount)) }
    /// The key is a point of small order (all zeros, for one): whatever is
    /// sealed to it, anyone could open.
    public static let smallOrder = Self(code: .smallOrder)

    public var description: String {
        switch code {
        case .notBase64:
            "device public key is not valid base64"
        case .wrongLength(let byteCount):
            "device public key decodes to \(byteCount) bytes; a raw X25519 public key has \(HeraldUserInfo.keyByteCount)"
        case .smallOrder:
            "device public key is a point of small order, not a real device key"
        }
    }
}
