import Crypto
import Foundation

/// The sealed part of a notification's userInfo (DESIGN contract 3):
/// `{"v":1,"kid":…,"enc":…,"ct":…}`.
///
/// `enc` is the HPKE encapsulated key and `ct` the ciphertext (with its tag),
/// both standard base64 with padding.
public struct SealedEnvelope: Codable, Sendable, Hashable {
    /// Envelope format version; only ``HeraldUserInfo/envelopeVersion`` is understood.
    public var v: Int
    /// The identifier of the device key the envelope is sealed to.
    public var kid: String
    /// The HPKE encapsulated key, standard base64.
    public var enc: String
    /// The HPKE ciphertext including the authentication tag, standard base64.
    public var ct: String

    /// An envelope from its four fields, as the payload's `herald.sealed` holds them.
    public init(v: Int, kid: String, enc: String, ct: String) {
        self.v = v
        self.kid = kid
        self.enc = enc
        self.ct = ct
    }
}

/// The constants both ends of contract 3 agree on. The server's sealer and the
/// extension's opener use these and nothing else.
public enum HeraldUserInfo {
    /// The only envelope version this library writes and reads.
    public static let envelopeVersion = 1

    /// HPKE `info` as text.
    public static let infoString = "herald/userinfo/v1"

    /// HPKE `info`: the UTF-8 bytes of ``infoString``.
    public static let info = Data(infoString.utf8)

    /// RFC 9180 base mode, DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305.
    public static let ciphersuite: HPKE.Ciphersuite = .Curve25519_SHA256_ChachaPoly

    /// Length in bytes of an X25519 encapsulated key (`enc`) and public key.
    public static let keyByteCount = 32

    /// Length in bytes of the ChaCha20-Poly1305 tag at the end of `ct`.
    public static let tagByteCount = 16

    /// HPKE `aad`: the UTF-8 bytes of `"<campaign>:<delivery>"`, which binds the
    /// ciphertext to one delivery.
    public static func aad(campaign: Int64, delivery: Int64) -> Data {
        Data("\(campaign):\(delivery)".utf8)
    }
}
