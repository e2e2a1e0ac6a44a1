import Crypto
import ExtensionKit
import Foundation

/// A device's X25519 public key, as the app registers it (standard base64 of
/// the 32 raw bytes), with its key id.
public struct DeviceKey: Sendable, Hashable, CustomStringConvertible {
    public let publicKey: Curve25519.KeyAgreement.PublicKey
    /// `dk-` and the first 12 hex digits of SHA-256 of the raw public key.
    public let keyID: String

    public init(publicKey: Curve25519.KeyAgreement.PublicKey) {
        self.publicKey = publicKey
        keyID = Self.keyID(for: publicKey)
    }

    /// Parses standard base64 of the 32 raw key bytes (surrounding whitespace ignored).
    public init(base64 text: String) throws(DeviceKeyError) {
        try self.init(rawRepresentation: try Self.bytes(base64: text))
    }

    /// Parses the 32 raw key bytes.
    public init(rawRepresentation bytes: some DataProtocol) throws(DeviceKeyError) {
        self.init(publicKey: try Self.checkedKey(bytes))
    }

    /// The public key of standard base64 text, checked as `init(base64:)`
    /// checks it, without its key id (SHA-256 of the key: a seal names the
    /// key id the device registered, so hashing it again is wasted).
    public static func publicKey(base64 text: String) throws(DeviceKeyError) -> Curve25519.KeyAgreement.PublicKey {
        try checkedKey(try bytes(base64: text))
    }

    /// The bytes of standard base64 text, surrounding whitespace ignored
    /// (trimmed only when the text does not decode as it is: a registered
    /// key has none).
    private static func bytes(base64 text: String) throws(DeviceKeyError) -> Data {
        if let bytes = Data(base64Encoded: text) { return bytes }
        guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw .notBase64
        }
        return bytes
    }

    private static func checkedKey(_ bytes: some DataProtocol) throws(DeviceKeyError) -> Curve25519.KeyAgreement.PublicKey {
        guard bytes.count == HeraldUserInfo.keyByteCount,
              let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: Data(bytes))
        else {
            throw .wrongLength(byteCount: bytes.count)
        }
        guard !X25519Points.hasSmallOrder(bytes) else { throw .smallOrder }
        return key
    }

    /// The key as standard base64 of its 32 raw bytes.
    public var base64: String { publicKey.rawRepresentation.base64EncodedString() }

    /// `dk-` and the first 12 hex digits of SHA-256 of the raw public key.
    public static func keyID(for publicKey: Curve25519.KeyAgreement.PublicKey) -> String {
        let digest = SHA256.hash(data: publicKey.rawRepresentation)
        let hex = Array("0123456789abcdef".utf8)
        var id = Array("dk-".utf8)
        for byte in digest.prefix(6) {
            id.append(hex[Int(byte >> 4)])
            id.append(hex[Int(byte & 0x0f)])
        }
        return String(decoding: id, as: UTF8.self)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.publicKey.rawRepresentation == rhs.publicKey.rawRepresentation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(publicKey.rawRepresentation)
    }

    public var description: String { "DeviceKey(\(keyID))" }
}
