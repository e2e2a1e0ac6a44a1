import APNs
import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The CA that signs client certificates: the simulator accepts a client certificate only when it
/// chains to it (`client-ca.pem`, its key `client-ca-key.pem`, beside the server's files).
struct ClientCA: Sendable {
    var certificate: Certificate
    var key: P256.Signing.PrivateKey
    var path: String

    static let fileName = "client-ca.pem"
    static let keyFileName = "client-ca-key.pem"

    var nioCertificate: NIOSSLCertificate {
        get throws { try NIOSSLCertificate(bytes: Array(certificate.serializeAsPEM().pemString.utf8), format: .pem) }
    }

    /// The client CA in `directory` when both files are there (a restarted simulator keeps its
    /// clients' certificates valid), else a new one written there.
    static func loadOrGenerate(in directory: String) throws -> ClientCA {
        let path = (directory as NSString).appendingPathComponent(fileName)
        let keyPath = (directory as NSString).appendingPathComponent(keyFileName)
        if let certificatePEM = try? String(contentsOfFile: path, encoding: .utf8),
            let keyPEM = try? String(contentsOfFile: keyPath, encoding: .utf8)
        {
            guard let certificate = try? Certificate(pemEncoded: certificatePEM),
                let key = try? P256.Signing.PrivateKey(pemRepresentation: keyPEM)
            else {
                throw SimulatorError.tlsMaterial("cannot load the client CA \(path) / \(keyPath)")
            }
            return ClientCA(certificate: certificate, key: key, path: path)
        }
        return try generate(in: directory)
    }

    /// A new client CA, valid for 30 days, written into `directory`.
    static func generate(in directory: String) throws -> ClientCA {
        let path = (directory as NSString).appendingPathComponent(fileName)
        let keyPath = (directory as NSString).appendingPathComponent(keyFileName)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let now = Date()
            let key = P256.Signing.PrivateKey()
            // A name of its own: certificates of another simulator's client CA then fail as of an unknown CA.
            let name = try DistinguishedName {
                CommonName("Herald APNs simulator client CA \(UUID().uuidString.prefix(8).lowercased())")
            }
            let certificate = try TLSMaterial.selfSignedCA(name: name, key: key, now: now)
            try Data(certificate.serializeAsPEM().pemString.utf8).write(to: URL(fileURLWithPath: path))
            try writePrivate(Data(key.pemRepresentation.utf8), to: keyPath)
            return ClientCA(certificate: certificate, key: key, path: path)
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw SimulatorError.tlsMaterial("cannot generate the client CA in \(directory)")
        }
    }

    /// A client certificate for `topics`, as Apple issues them: the first topic is the subject's
    /// UID, and every topic is in the 1.2.840.113635.100.6.3.6 extension, encoded as Apple does (a
    /// SEQUENCE of UTF8String bundle ids, each followed by a SEQUENCE of its kinds, here "app").
    func issue(
        topics: [String],
        directory: String,
        name: String,
        validity: ClosedRange<Date>?,
        password: String
    ) throws -> IssuedClientCertificate {
        let dir = directory as NSString
        let certificatePath = dir.appendingPathComponent("\(name).pem")
        let keyPath = dir.appendingPathComponent("\(name)-key.pem")
        let p12Path = dir.appendingPathComponent("\(name).p12")
        let passwordPath = dir.appendingPathComponent("\(name).p12.password")
        let leaf: Certificate
        let leafKey = P256.Signing.PrivateKey()
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let now = Date()
            let validity = validity ?? now.addingTimeInterval(-3600)...now.addingTimeInterval(30 * 86400)
            var attributes = [RelativeDistinguishedName(.init(type: .RDNAttributeType.commonName,
                utf8String: "Apple Push Services: \(topics.first ?? name)"))]
            if let first = topics.first {
                attributes.append(RelativeDistinguishedName(.init(type: ClientCertificateFields.userID, utf8String: first)))
            }
            var serializer = DER.Serializer()
            try serializer.appendConstructedNode(identifier: .sequence) { coder in
                for topic in topics {
                    try coder.serialize(ASN1UTF8String(contentBytes: ArraySlice(topic.utf8)))
                    try coder.appendConstructedNode(identifier: .sequence) { kinds in
                        try kinds.serialize(ASN1UTF8String(contentBytes: ArraySlice("app".utf8)))
                    }
                }
            }
            leaf = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: Certificate.PrivateKey(leafKey).publicKey,
                notValidBefore: validity.lowerBound,
                notValidAfter: validity.upperBound,
                issuer: certificate.subject,
                subject: DistinguishedName(attributes),
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions([
                    try Critical(BasicConstraints.notCertificateAuthority).makeCertificateExtension(),
                    try Critical(KeyUsage(digitalSignature: true)).makeCertificateExtension(),
                    try ExtendedKeyUsage([.clientAuth]).makeCertificateExtension(),
                    Certificate.Extension(
                        oid: ClientCertificateFields.topicsExtension,
                        critical: false,
                        value: serializer.serializedBytes[...]
                    ),
                ]),
                issuerPrivateKey: Certificate.PrivateKey(key)
            )
            try Data(leaf.serializeAsPEM().pemString.utf8).write(to: URL(fileURLWithPath: certificatePath))
            try writePrivate(Data(leafKey.pemRepresentation.utf8), to: keyPath)
            try writePrivate(Data((password + "\n").utf8), to: passwordPath)
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw SimulatorError.tlsMaterial("cannot issue a client certificate into \(directory)")
        }
        try Self.exportPKCS12(certificatePath: certificatePath, keyPath: keyPath, passwordPath: passwordPath, to: p12Path)
        let fields = ClientCertificateFields(leaf)
        return IssuedClientCertificate(
            certificatePath: certificatePath,
            privateKeyPath: keyPath,
            p12Path: p12Path,
            passwordFilePath: passwordPath,
            serialNumber: fields.serialNumber,
            notAfter: fields.notAfter,
            topics: fields.topics
        )
    }

    /// Runs `openssl pkcs12 -export`: no Swift API here writes PKCS#12. OpenSSL 3's default
    /// algorithms (PBES2/AES-256, HMAC-SHA256) are what BoringSSL's reader (NIOSSLPKCS12Bundle) takes.
    static func exportPKCS12(certificatePath: String, keyPath: String, passwordPath: String, to p12Path: String) throws {
        let candidates = ["/usr/bin/openssl", "/usr/local/bin/openssl", "/opt/homebrew/bin/openssl"]
        guard let openssl = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw SimulatorError.tlsMaterial("openssl is needed to write \(p12Path) (PKCS#12); install it, or use the PEM files")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = [
            "pkcs12", "-export", "-in", certificatePath, "-inkey", keyPath, "-out", p12Path,
            "-passout", "file:\(passwordPath)",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw SimulatorError.tlsMaterial("openssl is needed to write \(p12Path) (PKCS#12); \(openssl) did not start")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SimulatorError.tlsMaterial("openssl could not write \(p12Path) (exit \(process.terminationStatus))")
        }
        guard chmod(p12Path, 0o600) == 0 else { throw SimulatorError.tlsMaterial("cannot chmod 600 \(p12Path)") }
    }
}

/// Writes a file only its owner may read (a key or a password).
func writePrivate(_ data: Data, to path: String) throws {
    try? FileManager.default.removeItem(atPath: path)
    guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
        throw SimulatorError.tlsMaterial("cannot write \(path)")
    }
}
