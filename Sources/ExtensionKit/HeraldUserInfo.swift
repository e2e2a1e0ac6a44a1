import Crypto
import Foundation

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
