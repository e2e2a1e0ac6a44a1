import Crypto
import ExtensionKit
import Foundation
import Testing

/// RFC 9180 appendix A.2.1 (base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256,
/// ChaCha20-Poly1305), first encryption (A.2.1.1, sequence number 0): the suite
/// contract 3 names, checked against the RFC's own known answer.
@Suite("RFC 9180 known answer")
struct RFC9180VectorTests {
    static func hex(_ s: String) -> Data {
        var out = Data()
        var index = s.startIndex
        while index < s.endIndex {
            let next = s.index(index, offsetBy: 2)
            out.append(UInt8(s[index..<next], radix: 16) ?? 0)
            index = next
        }
        return out
    }

    static let skRm = hex("8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb")
    static let pkRm = hex("4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a")
    static let enc = hex("1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a")
    static let info = hex("4f6465206f6e2061204772656369616e2055726e")   // "Ode on a Grecian Urn"
    static let aad = hex("436f756e742d30")                                // "Count-0"
    static let pt = hex("4265617574792069732074727574682c20747275746820626561757479")
    static let ct = hex("1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28")

    @Test func heraldsSuiteOpensTheRFCCiphertext() throws {
        let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Self.skRm)
        #expect(key.publicKey.rawRepresentation == Self.pkRm)
        var recipient = try HPKE.Recipient(privateKey: key, ciphersuite: HeraldUserInfo.ciphersuite,
                                           info: Self.info, encapsulatedKey: Self.enc)
        #expect(try recipient.open(Self.ct, authenticating: Self.aad) == Self.pt)
    }

    @Test func aFlippedByteDoesNotOpen() throws {
        let key = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: Self.skRm)
        var recipient = try HPKE.Recipient(privateKey: key, ciphersuite: HeraldUserInfo.ciphersuite,
                                           info: Self.info, encapsulatedKey: Self.enc)
        var tampered = Self.ct
        tampered[3] ^= 0x01
        #expect(throws: (any Error).self) { try recipient.open(tampered, authenticating: Self.aad) }
    }
}
