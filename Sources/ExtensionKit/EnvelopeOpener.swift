import Crypto
import Foundation

/// Opens sealed envelopes with the device's private key (DESIGN contract 3).
/// This is what a Notification Service Extension runs.
///
/// ```swift
/// let opener = EnvelopeOpener(privateKey: try .init(rawRepresentation: keyFromKeychain))
/// let note = try HeraldNotification(userInfo: request.content.userInfo)
/// let fields = try opener.sealedFields(in: note) ?? [:]
/// ```
public struct EnvelopeOpener: Sendable, CustomStringConvertible, CustomReflectable {
    private let privateKey: Curve25519.KeyAgreement.PrivateKey
    /// When set, envelopes naming another `kid` fail with ``OpenError/unknownKey``
    /// before any cryptography runs (useful after a key rotation).
    public let keyID: String?

    /// An opener holding the device's private key.
    ///
    /// - Parameters:
    ///   - privateKey: The X25519 key whose public half the app registered
    ///     (``AppRequestBuilder/Registration/publicKey``). Keep it in the
    ///     keychain, in an access group the app and its extensions share.
    ///   - keyID: The registered key id, to refuse envelopes sealed to another key; `nil` opens any.
    public init(privateKey: Curve25519.KeyAgreement.PrivateKey, keyID: String? = nil) {
        self.privateKey = privateKey
        self.keyID = keyID
    }

    /// Opens `envelope`, sealed for delivery `delivery` of campaign `campaign`,
    /// and returns the plaintext bytes (a UTF-8 JSON object).
    ///
    /// - Throws: ``OpenError``: ``OpenError/unsupportedVersion``,
    ///   ``OpenError/unknownKey``, ``OpenError/malformedEnvelope`` or
    ///   ``OpenError/wrongKeyOrTampered``.
    public func open(_ envelope: SealedEnvelope, campaign: Int64, delivery: Int64) throws(OpenError) -> Data {
        guard envelope.v == HeraldUserInfo.envelopeVersion else {
            throw .unsupportedVersion("v = \(envelope.v)")
        }
        if let keyID, envelope.kid != keyID {
            throw .unknownKey("envelope kid differs from the opener's")
        }
        guard let enc = Data(base64Encoded: envelope.enc) else {
            throw .malformedEnvelope("enc is not standard base64")
        }
        guard enc.count == HeraldUserInfo.keyByteCount else {
            throw .malformedEnvelope("enc decodes to \(enc.count) bytes, expected \(HeraldUserInfo.keyByteCount)")
        }
        guard !X25519Points.hasSmallOrder(enc) else {
            throw .malformedEnvelope("enc is a point of small order")
        }
        guard let ciphertext = Data(base64Encoded: envelope.ct) else {
            throw .malformedEnvelope("ct is not standard base64")
        }
        guard ciphertext.count >= HeraldUserInfo.tagByteCount else {
            throw .malformedEnvelope("ct is shorter than the authentication tag")
        }
        do {
            var recipient = try HPKE.Recipient(
                privateKey: privateKey,
                ciphersuite: HeraldUserInfo.ciphersuite,
                info: HeraldUserInfo.info,
                encapsulatedKey: enc
            )
            return try recipient.open(
                ciphertext,
                authenticating: HeraldUserInfo.aad(campaign: campaign, delivery: delivery)
            )
        } catch {
            throw .wrongKeyOrTampered
        }
    }

    /// Opens `envelope` and decodes its JSON plaintext as `type`.
    public func open<Fields: Decodable>(
        _ envelope: SealedEnvelope,
        as type: Fields.Type,
        campaign: Int64,
        delivery: Int64
    ) throws(OpenError) -> Fields {
        let plaintext = try open(envelope, campaign: campaign, delivery: delivery)
        do {
            return try JSONDecoder().decode(Fields.self, from: plaintext)
        } catch {
            throw .malformedPlaintext("plaintext does not decode as \(Fields.self)")
        }
    }

    /// Opens `envelope` whose plaintext is a JSON object of strings (the usual
    /// case: a coupon code, an order total).
    public func openFields(_ envelope: SealedEnvelope, campaign: Int64, delivery: Int64) throws(OpenError) -> [String: String] {
        try open(envelope, as: [String: String].self, campaign: campaign, delivery: delivery)
    }

    /// Opens the sealed fields of a parsed notification, bound to its own
    /// campaign and delivery; `nil` when the notification carries none.
    public func sealedFields(in notification: HeraldNotification) throws(OpenError) -> [String: String]? {
        guard let sealed = notification.sealed else { return nil }
        return try openFields(sealed, campaign: notification.campaign, delivery: notification.delivery)
    }

    /// Names the key id only; the private key is never printed.
    public var description: String {
        "EnvelopeOpener(keyID: \(keyID ?? "any"), privateKey: <redacted>)"
    }

    /// Shows ``keyID`` only, so `dump` and debuggers never show the private key.
    public var customMirror: Mirror {
        Mirror(self, children: ["keyID": keyID as Any], displayStyle: .struct)
    }
}
