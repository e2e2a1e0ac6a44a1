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

/// Seals a delivery's sensitive fields to its device (DESIGN contract 3):
/// HPKE base mode, X25519 / HKDF-SHA256 / ChaCha20-Poly1305,
/// `info` = `herald/userinfo/v1`, `aad` = `"<campaign>:<delivery>"`.
public enum Sealer {
    /// Seals `json`, the UTF-8 bytes of a JSON object, to `publicKey`.
    /// The caller vouches that `json` is a JSON object; it is not parsed here.
    public static func seal<Fields: DataProtocol>(
        fields json: Fields,
        to publicKey: Curve25519.KeyAgreement.PublicKey,
        keyID: String,
        campaign: Int64,
        delivery: Int64
    ) throws(SealError) -> SealedEnvelope {
        guard !X25519Points.hasSmallOrder(publicKey.rawRepresentation) else { throw .unusableKey }
        var sender: HPKE.Sender
        do {
            sender = try HPKE.Sender(
                recipientKey: publicKey,
                ciphersuite: HeraldUserInfo.ciphersuite,
                info: HeraldUserInfo.info
            )
        } catch {
            throw .unusableKey
        }
        let ciphertext: Data
        do {
            ciphertext = try sender.seal(json, authenticating: HeraldUserInfo.aad(campaign: campaign, delivery: delivery))
        } catch {
            throw .encryptionFailed
        }
        return SealedEnvelope(
            v: HeraldUserInfo.envelopeVersion,
            kid: keyID,
            enc: sender.encapsulatedKey.base64EncodedString(),
            ct: ciphertext.base64EncodedString()
        )
    }

    /// Seals `json` to `device`, naming its key id.
    public static func seal<Fields: DataProtocol>(
        fields json: Fields,
        to device: DeviceKey,
        campaign: Int64,
        delivery: Int64
    ) throws(SealError) -> SealedEnvelope {
        try seal(fields: json, to: device.publicKey, keyID: device.keyID, campaign: campaign, delivery: delivery)
    }

    /// Seals string fields (a coupon code, an order total) as a JSON object to `device`.
    public static func seal(
        fields: [String: String],
        to device: DeviceKey,
        campaign: Int64,
        delivery: Int64
    ) throws(SealError) -> SealedEnvelope {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json: Data
        do {
            json = try encoder.encode(fields)
        } catch {
            throw .fieldsNotEncodable
        }
        return try seal(fields: json, to: device, campaign: campaign, delivery: delivery)
    }
}
