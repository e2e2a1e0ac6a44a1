import Crypto
import ExtensionKit
import Foundation

/// Why sealing failed.
public struct SealError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case unusableKey
        case encryptionFailed
        case fieldsNotEncodable
    }

    private let code: Code

    /// The device public key cannot be used for key agreement (a point of
    /// small order); the delivery cannot carry sealed fields.
    public static let unusableKey = Self(code: .unusableKey)
    /// Encryption failed.
    public static let encryptionFailed = Self(code: .encryptionFailed)
    /// The fields could not be encoded as JSON.
    public static let fieldsNotEncodable = Self(code: .fieldsNotEncodable)

    public var description: String {
        switch code {
        case .unusableKey: "device public key cannot be used for sealing"
        case .encryptionFailed: "sealing failed"
        case .fieldsNotEncodable: "sensitive fields could not be encoded as JSON"
        }
    }
}
