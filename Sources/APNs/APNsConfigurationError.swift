import Foundation

/// A configuration or key problem. The description names the setting or path, never key material.
public struct APNsConfigurationError: Error, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case invalidValue(String)
        case keyFileUnreadable(path: String)
        case keyFileTooOpen(path: String, mode: Int)
        case keyInvalid(path: String?)
        case caFileUnusable(path: String)
        case credentialFileTooOpen(path: String, mode: Int)
        case credentialFileUnreadable(path: String)
        case p12Unusable(path: String, withPassword: Bool)
        case certificateInvalid(path: String)
        case certificateKeyInvalid(path: String)
        case certificateUnusable(name: String)
        case tokenRequired(String)
    }
    private let code: Code

    static func invalidValue(_ name: String) -> Self { Self(code: .invalidValue(name)) }
    static func keyFileUnreadable(path: String) -> Self { Self(code: .keyFileUnreadable(path: path)) }
    static func keyFileTooOpen(path: String, mode: Int) -> Self { Self(code: .keyFileTooOpen(path: path, mode: mode)) }
    static func keyInvalid(path: String?) -> Self { Self(code: .keyInvalid(path: path)) }
    static func caFileUnusable(path: String) -> Self { Self(code: .caFileUnusable(path: path)) }
    static func credentialFileTooOpen(path: String, mode: Int) -> Self { Self(code: .credentialFileTooOpen(path: path, mode: mode)) }
    static func credentialFileUnreadable(path: String) -> Self { Self(code: .credentialFileUnreadable(path: path)) }
    static func p12Unusable(path: String, withPassword: Bool) -> Self {
        Self(code: .p12Unusable(path: path, withPassword: withPassword))
    }
    static func certificateInvalid(path: String) -> Self { Self(code: .certificateInvalid(path: path)) }
    static func certificateKeyInvalid(path: String) -> Self { Self(code: .certificateKeyInvalid(path: path)) }
    static func certificateUnusable(name: String) -> Self { Self(code: .certificateUnusable(name: name)) }
    /// A push type Apple takes with provider tokens only (`what` names it).
    static func tokenRequired(_ what: String) -> Self { Self(code: .tokenRequired(what)) }

    public var description: String {
        switch code {
        case .invalidValue(let name): return "APNs configuration: \(name) has an invalid value"
        case .keyFileUnreadable(let path): return "APNs signing key: cannot read \(path)"
        case .keyFileTooOpen(let path, let mode):
            return "APNs signing key: \(path) may be read by other users (mode 0\(String(mode, radix: 8))); it signs for your whole team: chmod 600 \(path)"
        case .keyInvalid(let path?):
            return "APNs signing key: \(path) is not a PKCS#8 P-256 private key in PEM (.p8)"
        case .keyInvalid(nil): return "APNs signing key: not a PKCS#8 P-256 private key in PEM (.p8)"
        case .caFileUnusable(let path): return "APNs trusted CA: cannot use \(path) as PEM certificates"
        case .credentialFileTooOpen(let path, let mode):
            return "APNs credential: \(path) may be read by other users (mode 0\(String(mode, radix: 8))); "
                + "whoever reads it can push as your app: chmod 600 \(path)"
        case .credentialFileUnreadable(let path): return "APNs credential: cannot read \(path)"
        case .p12Unusable(let path, true):
            return "APNs client certificate: cannot open \(path) as PKCS#12 with the password of its password file (wrong password, or not a .p12)"
        case .p12Unusable(let path, false):
            return "APNs client certificate: cannot open \(path) as PKCS#12 without a password (does it need a password file?)"
        case .certificateInvalid(let path): return "APNs client certificate: \(path) holds no usable X.509 certificate"
        case .certificateKeyInvalid(let path): return "APNs client certificate: \(path) is not a private key in PEM"
        case .certificateUnusable(let name):
            return "APNs credential \(name): the certificate and its private key cannot be used for TLS (do they belong together?)"
        case .tokenRequired(let what):
            return "APNs credential: \(what)"
        }
    }

    /// True for problems with a credential: the signing key, a client certificate or their files.
    var isKeyProblem: Bool {
        switch code {
        case .keyFileUnreadable, .keyFileTooOpen, .keyInvalid, .credentialFileTooOpen, .credentialFileUnreadable,
            .p12Unusable, .certificateInvalid, .certificateKeyInvalid, .certificateUnusable:
            return true
        default: return false
        }
    }
}
