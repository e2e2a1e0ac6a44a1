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
