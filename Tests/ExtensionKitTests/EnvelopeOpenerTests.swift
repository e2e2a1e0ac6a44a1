import Crypto
import ExtensionKit
import Foundation
import Testing
import TestVectors

@Suite("Opening sealed envelopes (contract 3)")
struct EnvelopeOpenerTests {
    let vectors: [SealedEnvelopeVectors.Vector]

    init() throws {
        vectors = try SealedEnvelopeVectors.load()
        try #require(vectors.count == 3, "sealed-envelope-v1.json should hold three vectors")
    }

    private func opener(_ vector: SealedEnvelopeVectors.Vector, keyID: String? = nil) throws -> EnvelopeOpener {
        let raw = try #require(Data(base64Encoded: vector.device_private_key))
        return EnvelopeOpener(privateKey: try .init(rawRepresentation: raw), keyID: keyID)
    }

    @Test func vectorsAgreeWithTheContractConstants() throws {
        for vector in vectors {
            #expect(vector.info == HeraldUserInfo.infoString)
            #expect(Data(vector.aad.utf8) == HeraldUserInfo.aad(campaign: vector.campaign, delivery: vector.delivery))
            #expect(vector.envelope.v == HeraldUserInfo.envelopeVersion)
            let raw = try #require(Data(base64Encoded: vector.device_private_key))
            let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: raw)
            #expect(key.publicKey.rawRepresentation.base64EncodedString() == vector.device_public_key)
        }
    }

    @Test func everyVectorOpensToExactlyItsPlaintext() throws {
        for vector in vectors {
            let plaintext = try opener(vector).open(vector.envelope, campaign: vector.campaign, delivery: vector.delivery)
            #expect(plaintext == Data(vector.plaintext.utf8), "vector for delivery \(vector.delivery)")
        }
    }

    @Test func openedFieldsDecode() throws {
        let first = vectors[0]
        let fields = try opener(first).openFields(first.envelope, campaign: first.campaign, delivery: first.delivery)
        #expect(fields == ["coupon": "FLASH-7Q2K", "price": "¥99"])

        struct Order: Decodable, Equatable { var order_total: String; var currency: String; var note: String }
        let second = vectors[1]
        let order = try opener(second).open(second.envelope, as: Order.self, campaign: second.campaign, delivery: second.delivery)
        #expect(order == Order(order_total: "128.50", currency: "USD", note: "très bien 👍"))

        let third = vectors[2]
        #expect(try opener(third).openFields(third.envelope, campaign: third.campaign, delivery: third.delivery) == [:])
    }

    @Test func anEnvelopeOpenedForAnotherDeliveryFails() throws {
        let (first, second) = (vectors[0], vectors[1])
        #expect(throws: OpenError.wrongKeyOrTampered) {
            try opener(first).open(first.envelope, campaign: second.campaign, delivery: second.delivery)
        }
        // Same campaign, another delivery; and the ids swapped round.
        #expect(throws: OpenError.wrongKeyOrTampered) {
            try opener(first).open(first.envelope, campaign: first.campaign, delivery: first.delivery + 1)
        }
        #expect(throws: OpenError.wrongKeyOrTampered) {
            try opener(first).open(first.envelope, campaign: first.delivery, delivery: first.campaign)
        }
    }

    @Test func aTamperedCiphertextFails() throws {
        let vector = vectors[1]
        let ct = try #require(Data(base64Encoded: vector.envelope.ct))
        for position in [0, ct.count / 2, ct.count - 1] {
            var flipped = ct
            flipped[position] ^= 0x01
            var envelope = vector.envelope
            envelope.ct = flipped.base64EncodedString()
            #expect(throws: OpenError.wrongKeyOrTampered, "byte \(position) flipped") {
                try opener(vector).open(envelope, campaign: vector.campaign, delivery: vector.delivery)
            }
        }
        var truncated = vector.envelope
        truncated.ct = ct.dropLast().base64EncodedString()
        #expect(throws: OpenError.wrongKeyOrTampered) {
            try opener(vector).open(truncated, campaign: vector.campaign, delivery: vector.delivery)
        }
    }

    @Test func aTamperedEncapsulatedKeyFails() throws {
        let vector = vectors[0]
        var enc = try #require(Data(base64Encoded: vector.envelope.enc))
        enc[3] ^= 0x80
        var envelope = vector.envelope
        envelope.enc = enc.base64EncodedString()
        #expect(throws: OpenError.wrongKeyOrTampered) {
            try opener(vector).open(envelope, campaign: vector.campaign, delivery: vector.delivery)
        }
    }

    @Test func anotherDevicesKeyFails() throws {
        let (first, second) = (vectors[0], vectors[1])
        #expect(throws: OpenError.wrongKeyOrTampered) {
            try opener(second).open(first.envelope, campaign: first.campaign, delivery: first.delivery)
        }
        let stranger = EnvelopeOpener(privateKey: .init())
        #expect(throws: OpenError.wrongKeyOrTampered) {
            try stranger.open(first.envelope, campaign: first.campaign, delivery: first.delivery)
        }
    }

    @Test func badBase64IsAMalformedEnvelope() throws {
        let vector = vectors[0]
        let mutations: [(String, (inout SealedEnvelope) -> Void)] = [
            ("enc not base64", { $0.enc = "not base64!" }),
            ("ct not base64", { $0.ct = "%%%%" }),
            ("enc unpadded", { $0.enc = String($0.enc.dropLast()) }),
            ("ct base64url", { $0.ct = $0.ct.replacingOccurrences(of: "+", with: "-") }),
            ("enc of 31 bytes", { $0.enc = Data(repeating: 7, count: 31).base64EncodedString() }),
            ("enc empty", { $0.enc = "" }),
            ("enc a point of small order", { $0.enc = Data(count: 32).base64EncodedString() }),
            ("ct shorter than a tag", { $0.ct = Data(repeating: 7, count: 15).base64EncodedString() }),
        ]
        for (name, mutate) in mutations {
            var envelope = vector.envelope
            mutate(&envelope)
            #expect(throws: OpenError.malformedEnvelope, "\(name)") {
                try opener(vector).open(envelope, campaign: vector.campaign, delivery: vector.delivery)
            }
        }
    }

    @Test func anotherVersionIsRefused() throws {
        let vector = vectors[0]
        for version in [0, 2, -1] {
            var envelope = vector.envelope
            envelope.v = version
            #expect(throws: OpenError.unsupportedVersion) {
                try opener(vector).open(envelope, campaign: vector.campaign, delivery: vector.delivery)
            }
        }
    }

    @Test func anOpenerBoundToAKeyIDRefusesOtherKeyIDs() throws {
        let vector = vectors[0]
        #expect(throws: OpenError.unknownKey) {
            try opener(vector, keyID: "dev-other").open(vector.envelope, campaign: vector.campaign, delivery: vector.delivery)
        }
        let plaintext = try opener(vector, keyID: vector.envelope.kid)
            .open(vector.envelope, campaign: vector.campaign, delivery: vector.delivery)
        #expect(plaintext == Data(vector.plaintext.utf8))
    }

    @Test func plaintextOfAnotherShapeIsMalformedPlaintext() throws {
        let vector = vectors[0]
        #expect(throws: OpenError.malformedPlaintext) {
            try opener(vector).open(vector.envelope, as: [Int].self, campaign: vector.campaign, delivery: vector.delivery)
        }
    }

    @Test func theEnvelopeHasTheContractsJSONShape() throws {
        let envelope = vectors[0].envelope
        let object = try #require(
            JSONSerialization.jsonObject(with: JSONEncoder().encode(envelope)) as? [String: Any]
        )
        #expect(Set(object.keys) == ["v", "kid", "enc", "ct"])
        #expect(object["v"] as? Int == 1)
        #expect(object["kid"] as? String == "dev-918273")
    }

    @Test func printingAnOpenerShowsNoKey() throws {
        let vector = vectors[0]
        let opener = try opener(vector)
        var dumped = ""
        dump(opener, to: &dumped)
        for text in [String(describing: opener), String(reflecting: opener), dumped] {
            #expect(!text.contains(vector.device_private_key))
            #expect(text.contains("redacted") || !text.contains("privateKey"))
        }
    }

    @Test func aMissingVectorFolderIsAFailureNotAPass() {
        #expect(throws: SharedVectors.Missing.self) {
            try SharedVectors.load("sealed-envelope-v1.json", as: SealedEnvelopeVectors.self, filePath: "/nonexistent/repo/Tests/ExtensionKitTests/X.swift")
        }
        do {
            _ = try SharedVectors.load("sealed-envelope-v1.json", as: SealedEnvelopeVectors.self, filePath: "/nonexistent/repo/Tests/ExtensionKitTests/X.swift")
        } catch {
            #expect("\(error)".contains("/nonexistent/repo/Tests/Vectors/sealed-envelope-v1.json"))
        }
    }
}
