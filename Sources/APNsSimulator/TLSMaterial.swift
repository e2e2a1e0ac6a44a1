import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The simulator's certificate chain and key.
struct TLSMaterial {
    var chain: [NIOSSLCertificate]
    var key: NIOSSLPrivateKey
    var caPath: String?
    /// The CA that client certificates must chain to.
    var clientCA: ClientCA

    static func load(_ tls: SimulatorConfiguration.TLS) throws -> TLSMaterial {
        switch tls {
        case .generate(let directory):
            return try generate(into: directory)
        case .files(let chainPath, let keyPath, let caPath):
            do {
                let chain = try NIOSSLCertificate.fromPEMFile(chainPath)
                let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
                // The client CA lives beside the CA (or the chain): kept when there, else made there,
                // or in a directory of its own when that one cannot be written.
                let directory = ((caPath ?? chainPath) as NSString).deletingLastPathComponent
                let clientCA: ClientCA
                do {
                    clientCA = try ClientCA.loadOrGenerate(in: directory.isEmpty ? "." : directory)
                } catch {
                    let own = (NSTemporaryDirectory() as NSString).appendingPathComponent("apns-sim-client-ca-\(UUID().uuidString)")
                    clientCA = try ClientCA.generate(in: own)
                }
                return TLSMaterial(chain: chain, key: key, caPath: caPath, clientCA: clientCA)
            } catch let error as SimulatorError {
                throw error
            } catch {
                throw SimulatorError.tlsMaterial("cannot load \(chainPath) / \(keyPath)")
            }
        }
    }

    /// A CA certificate for `key`, valid from an hour ago for 30 days, that signs leaves only.
    static func selfSignedCA(name: DistinguishedName, key: P256.Signing.PrivateKey, now: Date) throws -> Certificate {
        try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PrivateKey(key).publicKey,
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(30 * 86400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
    }

    /// A CA and a leaf for 127.0.0.1, ::1 and localhost, valid for 30 days, and a client CA.
    static func generate(into directory: String) throws -> TLSMaterial {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let now = Date()
            let caKey = P256.Signing.PrivateKey()
            let caName = try DistinguishedName { CommonName("Herald APNs simulator CA") }
            let ca = try selfSignedCA(name: caName, key: caKey, now: now)
            let leafKey = P256.Signing.PrivateKey()
            let leafName = try DistinguishedName { CommonName("localhost") }
            let leaf = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: Certificate.PrivateKey(leafKey).publicKey,
                notValidBefore: now.addingTimeInterval(-3600),
                notValidAfter: now.addingTimeInterval(30 * 86400),
                issuer: caName,
                subject: leafName,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    SubjectAlternativeNames([
                        .dnsName("localhost"),
                        .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                        .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
                    ])
                },
                issuerPrivateKey: Certificate.PrivateKey(caKey)
            )
            let caPEM = try ca.serializeAsPEM().pemString
            let leafPEM = try leaf.serializeAsPEM().pemString
            let keyPEM = leafKey.pemRepresentation
            let caPath = (directory as NSString).appendingPathComponent("ca.pem")
            let leafPath = (directory as NSString).appendingPathComponent("server.pem")
            let keyPath = (directory as NSString).appendingPathComponent("server-key.pem")
            try Data(caPEM.utf8).write(to: URL(fileURLWithPath: caPath))
            try Data(leafPEM.utf8).write(to: URL(fileURLWithPath: leafPath))
            guard
                FileManager.default.createFile(
                    atPath: keyPath,
                    contents: Data(keyPEM.utf8),
                    attributes: [.posixPermissions: 0o600]
                )
            else {
                throw SimulatorError.tlsMaterial("cannot write \(keyPath)")
            }
            return TLSMaterial(
                chain: [try NIOSSLCertificate(bytes: Array(leafPEM.utf8), format: .pem)],
                key: try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem),
                caPath: caPath,
                clientCA: try ClientCA.generate(in: directory)
            )
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw SimulatorError.tlsMaterial("cannot generate a certificate in \(directory)")
        }
    }
}
