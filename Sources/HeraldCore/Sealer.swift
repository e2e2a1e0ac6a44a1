import Crypto
import ExtensionKit
import Foundation

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
