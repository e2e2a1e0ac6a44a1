import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import TestVectors
import Testing

@Suite("Sealing sensitive fields (contract 3)")
struct SealingTests {
    @Test func aSealedEnvelopeOpensWithTheExtensionsOpener() throws {
        let pair = DeviceKeyPair.generate()
        let fields = Data(#"{"coupon":"FLASH-7Q2K","price":"¥99"}"#.utf8)
        let envelope = try Sealer.seal(fields: fields, to: pair.publicKey, campaign: 42, delivery: 918_273)

        #expect(envelope.v == 1)
        #expect(envelope.kid == pair.keyID)
        #expect(Data(base64Encoded: envelope.enc)?.count == 32)
        #expect(Data(base64Encoded: envelope.ct)?.count == fields.count + 16)

        let opener = EnvelopeOpener(privateKey: pair.privateKey, keyID: pair.keyID)
        #expect(try opener.open(envelope, campaign: 42, delivery: 918_273) == fields)
    }

    @Test func itFailsToOpenForAnotherCampaignOrDelivery() throws {
        let pair = DeviceKeyPair.generate()
        let envelope = try Sealer.seal(fields: ["coupon": "A1"], to: pair.publicKey, campaign: 42, delivery: 918_273)
        let opener = EnvelopeOpener(privateKey: pair.privateKey)
        for (campaign, delivery): (Int64, Int64) in [(42, 918_274), (43, 918_273), (918_273, 42), (4, 2_918_273)] {
            #expect(throws: OpenError.wrongKeyOrTampered, "\(campaign):\(delivery)") {
                try opener.open(envelope, campaign: campaign, delivery: delivery)
            }
        }
        #expect(try opener.openFields(envelope, campaign: 42, delivery: 918_273) == ["coupon": "A1"])
    }

    @Test func itFailsToOpenWithAnotherDevicesKey() throws {
        let pair = DeviceKeyPair.generate()
        let envelope = try Sealer.seal(fields: Data("{}".utf8), to: pair.publicKey, campaign: 1, delivery: 2)
        #expect(throws: OpenError.wrongKeyOrTampered) {
            try EnvelopeOpener(privateKey: DeviceKeyPair.generate().privateKey).open(envelope, campaign: 1, delivery: 2)
        }
    }

    @Test func sealingTwiceGivesDifferentEnvelopes() throws {
        let device = DeviceKeyPair.generate().publicKey
        let first = try Sealer.seal(fields: ["coupon": "A1"], to: device, campaign: 1, delivery: 2)
        let second = try Sealer.seal(fields: ["coupon": "A1"], to: device, campaign: 1, delivery: 2)
        #expect(first.enc != second.enc)
        #expect(first.ct != second.ct)
    }

    @Test func sealingToTheVectorsDeviceKeysOpensWithTheirPrivateKeys() throws {
        for vector in try SealedEnvelopeVectors.load() {
            let device = try DeviceKey(base64: vector.device_public_key)
            let envelope = try Sealer.seal(
                fields: Data(vector.plaintext.utf8), to: device.publicKey, keyID: vector.envelope.kid,
                campaign: vector.campaign, delivery: vector.delivery
            )
            let privateKey = try Curve25519.KeyAgreement.PrivateKey(
                rawRepresentation: try #require(Data(base64Encoded: vector.device_private_key))
            )
            let opened = try EnvelopeOpener(privateKey: privateKey)
                .open(envelope, campaign: vector.campaign, delivery: vector.delivery)
            #expect(opened == Data(vector.plaintext.utf8))
        }
    }

    @Test func stringFieldsAreSealedAsAJSONObject() throws {
        let pair = DeviceKeyPair.generate()
        let envelope = try Sealer.seal(
            fields: ["order_total": "128.50", "note": "très bien 👍 / ok"], to: pair.publicKey, campaign: 7, delivery: 1
        )
        let plaintext = try EnvelopeOpener(privateKey: pair.privateKey).open(envelope, campaign: 7, delivery: 1)
        #expect(String(decoding: plaintext, as: UTF8.self) == #"{"note":"très bien 👍 / ok","order_total":"128.50"}"#)
    }

    /// The encodings of small-order points; key agreement with them gives an
    /// all-zero secret that anyone can compute.
    static let smallOrderKeys: [Data] = {
        func nearP(_ low: UInt8) -> Data { Data([low] + [UInt8](repeating: 0xff, count: 30) + [0x7f]) }
        var highBitZero = Data(count: 32)
        highBitZero[31] = 0x80
        return [
            Data(count: 32),
            Data([1] + [UInt8](repeating: 0, count: 31)),
            Data(base64Encoded: "4Ot6fDtBuK4WVuP68Z/EatoJjeucMrH9hmIFFl9JuAA=")!,
            Data(base64Encoded: "X5yVvKNQjCSx0LFVnIPvWwREXMRYHI6G2CJO3dCfEVc=")!,
            nearP(0xec), nearP(0xed), nearP(0xee), // p - 1, p, p + 1
            highBitZero,
        ]
    }()

    @Test func smallOrderDeviceKeysAreRefused() throws {
        for bytes in Self.smallOrderKeys {
            // The backend agrees these are degenerate: the shared secret is all zeros.
            let point = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes)
            if let secret = try? Curve25519.KeyAgreement.PrivateKey().sharedSecretFromKeyAgreement(with: point) {
                #expect(secret.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
            }
            #expect(throws: DeviceKeyError.smallOrder) { try DeviceKey(rawRepresentation: bytes) }
            #expect(throws: DeviceKeyError.smallOrder) { try DeviceKey(base64: bytes.base64EncodedString()) }
            #expect(throws: SealError.unusableKey) {
                try Sealer.seal(fields: Data("{}".utf8), to: point, keyID: "dk-x", campaign: 1, delivery: 2)
            }
        }
    }

    @Test func deviceKeysParseFromBase64() throws {
        let vector = try #require(try SealedEnvelopeVectors.load().first)
        let key = try DeviceKey(base64: vector.device_public_key + "\n")
        #expect(key.base64 == vector.device_public_key)
        let digest = SHA256.hash(data: key.publicKey.rawRepresentation)
        let hex = digest.map { String(format: "%02x", $0) }.joined()
        #expect(key.keyID == "dk-" + hex.prefix(12))
        #expect(key == (try DeviceKey(rawRepresentation: key.publicKey.rawRepresentation)))
    }

    @Test func badDeviceKeysAreRefusedWithoutEchoingThem() {
        let cases: [(String, DeviceKeyError)] = [
            ("not base64 at all!", .notBase64),
            ("auYyK/2a0xkuiQUaAZhUtXUoa9++6wkcfSdWJjLLkUc", .notBase64), // unpadded
            (Data(repeating: 9, count: 31).base64EncodedString(), .wrongLength(byteCount: 31)),
            (Data(repeating: 9, count: 33).base64EncodedString(), .wrongLength(byteCount: 33)),
            ("", .wrongLength(byteCount: 0)),
        ]
        for (text, expected) in cases {
            do {
                _ = try DeviceKey(base64: text)
                Issue.record("\(expected) expected")
            } catch {
                #expect(error == expected)
                if !text.isEmpty {
                    #expect(!error.description.contains(text))
                }
            }
        }
    }

    @Test func generatedDeviceKeyPairsAreConsistentAndRedacted() throws {
        let pair = DeviceKeyPair.generate()
        let privateKey = try Curve25519.KeyAgreement.PrivateKey(
            rawRepresentation: try #require(Data(base64Encoded: pair.privateKeyBase64))
        )
        #expect(privateKey.publicKey.rawRepresentation.base64EncodedString() == pair.publicKeyBase64)
        #expect(try DeviceKey(base64: pair.publicKeyBase64).keyID == pair.keyID)
        #expect(pair.keyID.hasPrefix("dk-"))
        #expect(pair.keyID.count == 15)
        #expect(pair.keyID.dropFirst(3).allSatisfy { "0123456789abcdef".contains($0) })
        #expect(DeviceKeyPair.generate().keyID != pair.keyID)

        var dumped = ""
        dump(pair, to: &dumped)
        for text in [String(describing: pair), String(reflecting: pair), dumped] {
            #expect(!text.contains(pair.privateKeyBase64))
        }
    }

    @Test func aPayloadCarryingASealedEnvelopeOpensOnTheDevice() throws {
        let pair = DeviceKeyPair.generate()
        let envelope = try Sealer.seal(fields: ["coupon": "FLASH-7Q2K"], to: pair.publicKey, campaign: 42, delivery: 918_273)
        let payload: [String: Any] = [
            "aps": ["alert": ["body": "Flash sale"], "mutable-content": 1, "category": "flash_sale.v1"],
            "herald": [
                "c": 42, "d": 918_273, "k": "flash_sale",
                "sealed": ["v": envelope.v, "kid": envelope.kid, "enc": envelope.enc, "ct": envelope.ct],
            ],
        ]
        let notification = try HeraldNotification(json: JSONSerialization.data(withJSONObject: payload))
        #expect(notification.sealed == envelope)
        let opener = EnvelopeOpener(privateKey: pair.privateKey, keyID: pair.keyID)
        #expect(try opener.sealedFields(in: notification) == ["coupon": "FLASH-7Q2K"])
    }
}
