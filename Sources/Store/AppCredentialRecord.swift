import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// One APNs credential of an app: where its files are.
public struct AppCredentialRecord: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case token, certificate }

    public var app: String
    public var name: String
    /// `production`, `sandbox` or `any`.
    public var environment: String
    public var kind: Kind
    public var keyPath: String?
    public var keyID: String?
    public var teamID: String?
    /// A `.p12`, or a PEM certificate when `privateKeyPath` is set.
    public var certificatePath: String?
    public var passwordFile: String?
    public var privateKeyPath: String?
    public var retired: Bool

    public init(app: String, name: String, environment: String = "any", kind: Kind, keyPath: String? = nil,
                keyID: String? = nil, teamID: String? = nil, certificatePath: String? = nil,
                passwordFile: String? = nil, privateKeyPath: String? = nil, retired: Bool = false) {
        self.app = app
        self.name = name
        self.environment = environment
        self.kind = kind
        self.keyPath = keyPath
        self.keyID = keyID
        self.teamID = teamID
        self.certificatePath = certificatePath
        self.passwordFile = passwordFile
        self.privateKeyPath = privateKeyPath
        self.retired = retired
    }

    /// How the APNs client names it: `app/credential`.
    public var qualifiedName: String { Self.qualifiedName(app: app, name: name) }

    public static func qualifiedName(app: String, name: String) -> String { "\(app)/\(name)" }
}
