import Foundation
import NIOSSL
import SwiftASN1
import X509

/// What the client and the simulator read from a client certificate (swift-certificates).
package struct ClientCertificateFields: Sendable {
    package static let topicsExtension: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 3, 6]
    package static let userID: ASN1ObjectIdentifier = [0, 9, 2342, 19200300, 100, 1, 1]

    package var notBefore: Date
    package var notAfter: Date
    package var subject: String
    package var topics: [String]
    package var serialNumber: String

    package init?(der: [UInt8]) {
        guard let certificate = try? Certificate(derEncoded: der) else { return nil }
        self.init(certificate)
    }

    package init(_ certificate: Certificate) {
        notBefore = certificate.notValidBefore
        notAfter = certificate.notValidAfter
        subject = String(describing: certificate.subject)
        serialNumber = certificate.serialNumber.bytes.map { String(format: "%02x", $0) }.joined()
        var topics: [String] = []
        if let topicsExtension = certificate.extensions[oid: Self.topicsExtension] {
            topics = Self.strings(inSequence: topicsExtension.value)
        }
        if topics.isEmpty {
            for rdn in certificate.subject {
                for attribute in rdn where attribute.type == Self.userID {
                    if let uid = String(attribute.value) { topics.append(uid) }
                }
            }
        }
        self.topics = topics
    }

    /// The strings directly inside a DER SEQUENCE. Apple's topics extension is a SEQUENCE of
    /// UTF8String bundle ids, each followed by a SEQUENCE naming its kinds ("app", "voip", …);
    /// the nested sequences are skipped.
    static func strings(inSequence bytes: ArraySlice<UInt8>) -> [String] {
        guard let node = try? DER.parse(bytes), node.identifier == .sequence,
            case .constructed(let children) = node.content
        else { return [] }
        var strings: [String] = []
        for child in children
        where child.identifier == .utf8String || child.identifier == .printableString || child.identifier == .ia5String {
            if case .primitive(let content) = child.content, let text = String(bytes: content, encoding: .utf8) {
                strings.append(text)
            }
        }
        return strings
    }
}
