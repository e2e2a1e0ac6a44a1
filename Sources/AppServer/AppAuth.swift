import Foundation
import JWTKit

/// The claims of the token the app's backend issues for a device
/// registration (DESIGN, contract 6): `sub` is the app's user id, `aud` is
/// `herald` (the app `default`) or `herald:<app>`, and the token lives at
/// most an hour.
public struct AppRegistrationClaims: JWTPayload, Equatable {
    public var sub: SubjectClaim
    public var aud: AudienceClaim
    public var iat: IssuedAtClaim
    public var exp: ExpirationClaim

    public init(user: String, issuedAt: Date = Date(), lifetime: TimeInterval = 15 * 60, app: String? = nil) {
        sub = SubjectClaim(value: user)
        aud = AudienceClaim(value: [AppTokenVerifier.audience(app: app)])
        let whole = Date(timeIntervalSince1970: issuedAt.timeIntervalSince1970.rounded(.down))
        iat = IssuedAtClaim(value: whole)
        exp = ExpirationClaim(value: whole.addingTimeInterval(lifetime))
    }

    /// The time rules are checked by ``AppTokenVerifier`` with its clock.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Why an app token was refused; the message never holds the token.
public struct AppTokenError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Verifies app registration tokens with an app's public keys (PEM; ES256
/// P-256 or EdDSA Ed25519): the key configured by
/// `HERALD_APP_JWT_PUBLIC_KEY` / `HERALD_APP_JWT_PUBLIC_KEY_FILE` for the
/// app `default`, and the `registration_keys` of each app (`apps`). An app
/// holds several keys while its backend's key is replaced: a token verifies
/// with any of them.
public struct AppTokenVerifier: Sendable {
    public static let audience = "herald"
    /// `exp` may be at most this long after `iat`.
    public static let maxLifetime: TimeInterval = 3600
    /// Clock difference tolerated between the app's backend and Herald.
    public static let clockSkew: TimeInterval = 60

    public enum Algorithm: String, Sendable { case es256 = "ES256", eddsa = "EdDSA" }

    /// One collection per key: a token carries no `kid`, so each key is tried.
    private let keys: [JWTKeyCollection]
    /// The algorithm of the first key (for messages).
    public let algorithm: Algorithm
    /// The `aud` a token must carry: `herald` for the app `default`, `herald:<app>` for the others.
    public let expectedAudience: String
    private let clock: @Sendable () -> Date

    /// Reads a PEM public key: P-256 (ES256) or Ed25519 (EdDSA).
    public init(publicKeyPEM pem: String, clock: @escaping @Sendable () -> Date = Date.init) async throws(AppTokenError) {
        try await self.init(publicKeyPEMs: [pem], app: nil, clock: clock)
    }

    /// The verifier of an app's keys (`app` nil or `default`: audience `herald`).
    public init(publicKeyPEMs pems: [String], app: String?,
                clock: @escaping @Sendable () -> Date = Date.init) async throws(AppTokenError) {
        var keys: [JWTKeyCollection] = []
        var algorithms: [Algorithm] = []
        for pem in pems {
            let collection = JWTKeyCollection()
            if let key = try? ES256PublicKey(pem: pem) {
                await collection.add(ecdsa: key)
                algorithms.append(.es256)
            } else if let key = try? EdDSA.PublicKey(pem: pem) {
                await collection.add(eddsa: key)
                algorithms.append(.eddsa)
            } else {
                throw AppTokenError(message: "the app JWT public key is not a PEM P-256 (ES256) or Ed25519 (EdDSA) public key")
            }
            keys.append(collection)
        }
        guard let first = algorithms.first else { throw AppTokenError(message: "no app JWT public key is given") }
        self.keys = keys
        self.algorithm = first
        self.expectedAudience = Self.audience(app: app)
        self.clock = clock
    }

    /// The `aud` a backend puts in its tokens for `app`.
    public static func audience(app: String?) -> String {
        guard let app, app != "default" else { return audience }
        return "\(audience):\(app)"
    }

    /// The bearer token of `Authorization: Bearer <JWT>`.
    static func bearer(_ authorization: String?) -> Result<String, AppTokenError> {
        guard let authorization, authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            return .failure(AppTokenError(message: "an Authorization: Bearer <JWT> header issued by the app's backend is required"))
        }
        return .success(String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces))
    }

    /// Checks `Authorization: Bearer <JWT>`: signature (with any of the app's
    /// keys), `aud`, `iat`, `exp` (with the clock skew) and a lifetime of at
    /// most an hour.
    public func verify(authorization: String?) async -> Result<AppRegistrationClaims, AppTokenError> {
        let token: String
        switch Self.bearer(authorization) {
        case .success(let t): token = t
        case .failure(let e): return .failure(e)
        }
        var claims: AppRegistrationClaims?
        var failure = AppTokenError(message: "the token does not verify with the configured \(algorithm.rawValue) key")
        for collection in keys where claims == nil {
            do {
                claims = try await collection.verify(token, as: AppRegistrationClaims.self)
            } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
                failure = AppTokenError(message: "the token's signature does not verify with the configured key")
            } catch let error as JWTError where error.errorType == .malformedToken {
                return .failure(AppTokenError(message: "the bearer token is not a JWT"))
            } catch is DecodingError {
                return .failure(AppTokenError(message: "the token needs the claims sub, aud, iat and exp"))
            } catch {
                continue
            }
        }
        guard let claims else { return .failure(failure) }
        let now = clock()
        guard claims.aud.value.contains(expectedAudience) else {
            return .failure(AppTokenError(message: "the token's aud must be \"\(expectedAudience)\""))
        }
        guard claims.exp.value.timeIntervalSince(now) > -Self.clockSkew else {
            return .failure(AppTokenError(message: "the token has expired"))
        }
        guard claims.iat.value.timeIntervalSince(now) <= Self.clockSkew else {
            return .failure(AppTokenError(message: "the token's iat is in the future"))
        }
        guard claims.exp.value.timeIntervalSince(claims.iat.value) <= Self.maxLifetime else {
            return .failure(AppTokenError(message: "the token's exp must be at most an hour after its iat"))
        }
        guard !claims.sub.value.isEmpty else {
            return .failure(AppTokenError(message: "the token's sub (the app's user id) is empty"))
        }
        return .success(claims)
    }
}

/// What the app's backend does: signs registration tokens with its private
/// key. Herald itself only verifies; this is for `herald keys app-jwt`, the
/// demo (which plays the app's backend) and tests.
public struct AppTokenIssuer: Sendable {
    private let keys: JWTKeyCollection
    public let algorithm: AppTokenVerifier.Algorithm
    /// The public key, PEM: what `HERALD_APP_JWT_PUBLIC_KEY` is set to.
    public let publicKeyPEM: String
    /// The private key, PEM: stays with the app's backend.
    public let privateKeyPEM: String

    /// A new key pair.
    public init(algorithm: AppTokenVerifier.Algorithm = .es256) async throws {
        switch algorithm {
        case .es256:
            let key = ES256PrivateKey()
            try await self.init(privateKeyPEM: key.pemRepresentation)
        case .eddsa:
            let key = try EdDSA.PrivateKey()
            try await self.init(privateKeyPEM: key.pemRepresentation)
        }
    }

    /// The backend's existing private key (PEM, P-256 or Ed25519).
    public init(privateKeyPEM pem: String) async throws(AppTokenError) {
        let keys = JWTKeyCollection()
        if let key = try? ES256PrivateKey(pem: pem) {
            await keys.add(ecdsa: key)
            algorithm = .es256
            publicKeyPEM = key.publicKey.pemRepresentation
        } else if let key = try? EdDSA.PrivateKey(pem: pem) {
            await keys.add(eddsa: key)
            algorithm = .eddsa
            publicKeyPEM = key.publicKey.pemRepresentation
        } else {
            throw AppTokenError(message: "the key is not a PEM P-256 (ES256) or Ed25519 (EdDSA) private key")
        }
        privateKeyPEM = pem
        self.keys = keys
    }

    /// A token for `user`; the claims may be changed to make refused tokens in tests.
    public func token(_ claims: AppRegistrationClaims) async throws -> String {
        try await keys.sign(claims)
    }

    /// A token for `user` of `app` (nil: the app `default`, `aud` = `herald`).
    public func token(user: String, issuedAt: Date = Date(), lifetime: TimeInterval = 15 * 60,
                      app: String? = nil) async throws -> String {
        try await token(AppRegistrationClaims(user: user, issuedAt: issuedAt, lifetime: lifetime, app: app))
    }
}
