import APNs
import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A client certificate the simulator issued (`APNsSimulator.issueClientCertificate`): the files
/// a provider configures, and what identifies the certificate.
public struct IssuedClientCertificate: Sendable, Hashable {
    /// The certificate, PEM.
    public var certificatePath: String
    /// Its private key, PEM (PKCS#8), mode 0600.
    public var privateKeyPath: String
    /// Certificate and key as PKCS#12, encrypted with the password, mode 0600.
    public var p12Path: String
    /// The password of the `.p12`, on one line, mode 0600.
    public var passwordFilePath: String
    /// Lowercase hex, as `APNsClientCertificate.serialNumber` and `revokeCertificate` take it.
    public var serialNumber: String
    public var notAfter: Date
    public var topics: [String]
}
