import Crypto
import Foundation

/// Why a sealed envelope could not be opened.
///
/// Compare with the static members (`error == .wrongKeyOrTampered`); the detail
/// in ``debugDescription`` never contains key material or plaintext.
public struct OpenError: Error, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    private enum Code: Hashable, Sendable {
        case unsupportedVersion
        case malformedEnvelope
        case unknownKey
        case wrongKeyOrTampered
        case malformedPlaintext
    }

    private let code: Code
    private let detail: String

    private init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The envelope's `v` is not a version this library understands.
    public static let unsupportedVersion = Self(.unsupportedVersion)
    /// `enc` or `ct` is not standard base64, or has an impossible length.
    public static let malformedEnvelope = Self(.malformedEnvelope)
    /// The envelope names a key id other than the one the opener holds.
    public static let unknownKey = Self(.unknownKey)
    /// Authentication failed: another device's key, a modified `enc`/`ct`, or an
    /// envelope that belongs to another campaign or delivery.
    public static let wrongKeyOrTampered = Self(.wrongKeyOrTampered)
    /// The envelope opened, but the plaintext is not the JSON that was asked for.
    public static let malformedPlaintext = Self(.malformedPlaintext)

    static func unsupportedVersion(_ detail: String) -> Self { Self(.unsupportedVersion, detail) }
    static func malformedEnvelope(_ detail: String) -> Self { Self(.malformedEnvelope, detail) }
    static func unknownKey(_ detail: String) -> Self { Self(.unknownKey, detail) }
    static func malformedPlaintext(_ detail: String) -> Self { Self(.malformedPlaintext, detail) }

    /// Two errors are equal when they are the same case; the detail is ignored.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the case only, as ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A one-line reason, without the detail.
    public var description: String {
        switch code {
        case .unsupportedVersion: "sealed envelope has an unsupported version"
        case .malformedEnvelope: "sealed envelope is malformed"
        case .unknownKey: "sealed envelope is sealed to another device key"
        case .wrongKeyOrTampered: "sealed envelope does not open: wrong key, modified, or for another delivery"
        case .malformedPlaintext: "sealed envelope opened but its content is not the expected JSON"
        }
    }

    /// The reason and, when there is one, the detail (never key material or plaintext).
    public var debugDescription: String {
        detail.isEmpty ? description : "\(description) (\(detail))"
    }
}
