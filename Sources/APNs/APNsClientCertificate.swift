import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A TLS client certificate and its private key, for certificate-based APNs authentication.
///
/// Read once, when the configuration is made: what `notBefore`, `notAfter`, `subject` and
/// `topics` say comes from the leaf certificate (through swift-certificates), so the client can
/// refuse an expired certificate without connecting and an operator can see which bundle ids a
/// file is for. `description` names the file and the subject, never the key or the password.
public struct APNsClientCertificate: Sendable, CustomStringConvertible {
    /// Leaf first, as sent in the TLS handshake.
    let chain: [NIOSSLCertificate]
    let privateKey: NIOSSLPrivateKey
    /// The file(s) it was read from, for messages.
    public let source: String
    public let notBefore: Date
    public let notAfter: Date
    /// The leaf's subject (RFC 4514 text), for messages.
    public let subject: String
    /// The bundle ids the certificate is for: the strings of Apple's topics extension
    /// (1.2.840.113635.100.6.3.6) when present, else the subject's UID; may be empty.
    public let topics: [String]
    /// The leaf's serial number, lowercase hex.
    public let serialNumber: String

    /// A `.p12` (PKCS#12) whose password is the first line of `passwordFile` (nil: no password).
    /// Both files must be readable by their owner only, as a `.p8` must: whoever reads them can
    /// push as the app. Errors name the path, never the password.
    public init(p12Path: String, passwordFile: String?) throws {
        try SecretFile.ensurePrivate(p12Path)
        var password: [UInt8]?
        if let passwordFile {
            try SecretFile.ensurePrivate(passwordFile)
            guard let data = FileManager.default.contents(atPath: passwordFile) else {
                throw APNsConfigurationError.credentialFileUnreadable(path: passwordFile)
            }
            var line = data.prefix { $0 != UInt8(ascii: "\n") }
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            password = Array(line)
        }
        guard FileManager.default.isReadableFile(atPath: p12Path) else {
            throw APNsConfigurationError.credentialFileUnreadable(path: p12Path)
        }
        let bundle: NIOSSLPKCS12Bundle
        do {
            if let password {
                bundle = try NIOSSLPKCS12Bundle(file: p12Path, passphrase: password)
            } else {
                bundle = try NIOSSLPKCS12Bundle(file: p12Path)
            }
        } catch {
            throw APNsConfigurationError.p12Unusable(path: p12Path, withPassword: passwordFile != nil)
        }
        try self.init(chain: bundle.certificateChain, privateKey: bundle.privateKey, source: p12Path)
    }

    /// A PEM certificate (its chain may follow the leaf) and a PEM private key. The key file must
    /// be readable by its owner only.
    public init(certificatePEMPath: String, privateKeyPEMPath: String) throws {
        try SecretFile.ensurePrivate(privateKeyPEMPath)
        guard FileManager.default.isReadableFile(atPath: certificatePEMPath) else {
            throw APNsConfigurationError.credentialFileUnreadable(path: certificatePEMPath)
        }
        guard FileManager.default.isReadableFile(atPath: privateKeyPEMPath) else {
            throw APNsConfigurationError.credentialFileUnreadable(path: privateKeyPEMPath)
        }
        guard let chain = try? NIOSSLCertificate.fromPEMFile(certificatePEMPath), !chain.isEmpty else {
            throw APNsConfigurationError.certificateInvalid(path: certificatePEMPath)
        }
        guard let key = try? NIOSSLPrivateKey(file: privateKeyPEMPath, format: .pem) else {
            throw APNsConfigurationError.certificateKeyInvalid(path: privateKeyPEMPath)
        }
        try self.init(chain: chain, privateKey: key, source: "\(certificatePEMPath) + \(privateKeyPEMPath)")
    }

    init(chain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey, source: String) throws {
        guard let leaf = chain.first, let der = try? leaf.toDERBytes(),
            let fields = ClientCertificateFields(der: der)
        else {
            throw APNsConfigurationError.certificateInvalid(path: source)
        }
        self.chain = chain
        self.privateKey = privateKey
        self.source = source
        self.notBefore = fields.notBefore
        self.notAfter = fields.notAfter
        self.subject = fields.subject
        self.topics = fields.topics
        self.serialNumber = fields.serialNumber
    }

    /// True once `date` is past `notAfter` (APNs then refuses the handshake).
    public func isExpired(at date: Date) -> Bool {
        date >= notAfter
    }

    /// True when the certificate expires within `interval` after `date` (or has expired already):
    /// for warning an operator while there is time to renew.
    public func expiresWithin(_ interval: TimeInterval, of date: Date) -> Bool {
        notAfter.timeIntervalSince(date) <= interval
    }

    public var description: String {
        "APNsClientCertificate(source: \(source), subject: \(subject), topics: \(topics), "
            + "notAfter: \(ISO8601DateFormatter().string(from: notAfter)), privateKey: <redacted>)"
    }
}

/// The rule for files that hold a private key or its password (`.p8`, `.p12`, PEM key, password
/// file): refused when users other than the owner may read or write them.
enum SecretFile {
    static func ensurePrivate(_ path: String) throws {
        // The file's own mode, through symlinks (Kubernetes mounts secrets as links).
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        if let mode = (try? FileManager.default.attributesOfItem(atPath: target))?[.posixPermissions] as? NSNumber,
            mode.intValue & 0o077 != 0
        {
            throw APNsConfigurationError.credentialFileTooOpen(path: path, mode: mode.intValue & 0o777)
        }
    }
}
