import Foundation
import HeraldCore
import JWTKit
import NIOConcurrencyHelpers
import Store

/// The secrets reply tokens are checked with in `herald serve`: the current
/// one and, during a rotation's grace period, the previous one. A reload
/// (SIGHUP) replaces them whole (docs/operators.md, "Rotating keys").
public final class ReplyKeys: Sendable {
    private let box: NIOLockedValueBox<ReplyTokens>

    public init(_ tokens: ReplyTokens) {
        box = NIOLockedValueBox(tokens)
    }

    public var tokens: ReplyTokens { box.withLockedValue { $0 } }

    public func replace(_ tokens: ReplyTokens) {
        box.withLockedValue { $0 = tokens }
    }
}

/// Each app's registration keys in `herald serve`. A reload (SIGHUP)
/// replaces them whole, so a request sees either the old keys or the new
/// ones; none is refused while a backend's key is replaced, since the new
/// key is added beside the old one first (docs/operators.md, "Rotating keys").
public final class AppKeys: Sendable {
    private let box: NIOLockedValueBox<[String: AppTokenVerifier]>

    public init(_ apps: [String: AppTokenVerifier] = [:]) {
        box = NIOLockedValueBox(apps)
    }

    /// The keys of the app `default` alone (nil: none; registration answers 503).
    public convenience init(default verifier: AppTokenVerifier?) {
        self.init(verifier.map { [AppRecord.defaultName: $0] } ?? [:])
    }

    /// The apps whose backends can register devices.
    public var apps: [String] { box.withLockedValue { $0.keys.sorted() } }

    public func verifier(app: String) -> AppTokenVerifier? { box.withLockedValue { $0[app] } }

    public func replace(_ apps: [String: AppTokenVerifier]) {
        box.withLockedValue { $0 = apps }
    }

    /// The verifier of each app that has registration keys: the `default`
    /// app's configured key (`HERALD_APP_JWT_PUBLIC_KEY`) with its own
    /// `registration_keys`, and every other app's `registration_keys`.
    /// `defaultSource` names where `defaultPEM` came from in an error about it.
    public static func verifiers(apps: [AppRecord], defaultPEM: String?,
                                 defaultSource: String? = nil) async throws(AppTokenError) -> [String: AppTokenVerifier] {
        var out: [String: AppTokenVerifier] = [:]
        var records = apps
        if !records.contains(where: { $0.name == AppRecord.defaultName }) {
            records.append(AppRecord(name: AppRecord.defaultName, displayName: "Default app", topic: nil))
        }
        for app in records {
            var pems = app.registrationKeys
            if app.name == AppRecord.defaultName, let defaultPEM { pems.insert(defaultPEM, at: 0) }
            guard !pems.isEmpty else { continue }
            do {
                out[app.name] = try await AppTokenVerifier(publicKeyPEMs: pems, app: app.name)
            } catch {
                if app.name == AppRecord.defaultName, let defaultPEM,
                   (try? await AppTokenVerifier(publicKeyPEM: defaultPEM)) == nil {
                    throw AppTokenError(message: "\(defaultSource ?? "the app JWT public key"): \(error.message)")
                }
                throw AppTokenError(message: "app \(app.name): \(error.message)")
            }
        }
        return out
    }

    /// The app a registration token is for, read from its `aud` before its
    /// signature is checked (with that app's keys): `herald` is the app
    /// `default`, `herald:<app>` another one.
    static func app(ofToken token: String) async -> Result<String, AppTokenError> {
        let claims: AppRegistrationClaims
        do {
            claims = try await JWTKeyCollection().unverified(token, as: AppRegistrationClaims.self)
        } catch is DecodingError {
            return .failure(AppTokenError(message: "the token needs the claims sub, aud, iat and exp"))
        } catch {
            return .failure(AppTokenError(message: "the bearer token is not a JWT"))
        }
        let prefix = AppTokenVerifier.audience + ":"
        if let named = claims.aud.value.first(where: { $0.hasPrefix(prefix) }) {
            return .success(String(named.dropFirst(prefix.count)))
        }
        guard claims.aud.value.contains(AppTokenVerifier.audience) else {
            return .failure(AppTokenError(message: "the token's aud must be \"herald\", or \"herald:<app>\" for an app other than default"))
        }
        return .success(AppRecord.defaultName)
    }

    /// Verifies `Authorization: Bearer <JWT>` with the keys of the app its
    /// `aud` names: the app, and the token's claims. A token of app A's
    /// backend naming app B does not verify (B's keys are not A's).
    public func verify(authorization: String?) async -> Result<(app: String, claims: AppRegistrationClaims), AppTokenError> {
        let token: String
        switch AppTokenVerifier.bearer(authorization) {
        case .success(let t): token = t
        case .failure(let e): return .failure(e)
        }
        let app: String
        switch await Self.app(ofToken: token) {
        case .success(let a): app = a
        case .failure(let e): return .failure(e)
        }
        guard let verifier = verifier(app: app) else {
            return .failure(AppTokenError(message: "the token's aud names app \"\(app)\", which has no registration key here"))
        }
        return await verifier.verify(authorization: authorization).map { (app, $0) }
    }
}
