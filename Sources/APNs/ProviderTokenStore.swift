import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The one provider token shared by all connections of a client.
///
/// Renewed proactively once it is `renewalAge` old (50 minutes: APNs wants a token between
/// 20 and 60 minutes old, and answers 429 TooManyProviderTokenUpdates to faster renewal).
/// After a 403 ExpiredProviderToken the token of that generation may be renewed once early.
package final class ProviderTokenStore: Sendable {
    package struct Token: Sendable {
        /// `bearer <jwt>`, the authorization header value.
        package var headerValue: String
        var generation: Int
        var createdAt: NIODeadline
        var forcedRenewalUsed: Bool
    }

    static let renewalAge = TimeAmount.minutes(50)
    static let minimumAge = TimeAmount.minutes(20)

    private let key: APNsSigningKey
    private let keyID: String
    private let teamID: String
    private let clock: @Sendable () -> Date
    private let state = NIOLockedValueBox<Token?>(nil)

    package init(key: APNsSigningKey, keyID: String, teamID: String, clock: @escaping @Sendable () -> Date) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.clock = clock
    }

    /// The token to send now, renewed first when it is old enough.
    package func current() throws -> Token {
        try state.withLockedValue { token in
            let now = NIODeadline.now()
            if let existing = token, now - existing.createdAt < Self.renewalAge {
                return existing
            }
            let fresh = try makeToken(generation: (token?.generation ?? 0) + 1, now: now)
            token = fresh
            return fresh
        }
    }

    /// APNs called the token of `generation` expired. Renews it unless that was done already
    /// for this generation (or a newer token exists); returns the token to retry with.
    func renewAfterExpired(generation: Int) throws -> Token {
        try state.withLockedValue { token in
            let now = NIODeadline.now()
            guard var existing = token else {
                let fresh = try makeToken(generation: 1, now: now)
                token = fresh
                return fresh
            }
            if existing.generation != generation || existing.forcedRenewalUsed {
                return existing
            }
            existing.forcedRenewalUsed = true
            token = existing
            let fresh = try makeToken(generation: existing.generation + 1, now: now)
            token = fresh
            return fresh
        }
    }

    private func makeToken(generation: Int, now: NIODeadline) throws -> Token {
        let jwt = try ProviderTokenSigner.makeToken(key: key, keyID: keyID, teamID: teamID, issuedAt: clock())
        return Token(headerValue: "bearer " + jwt, generation: generation, createdAt: now, forcedRenewalUsed: false)
    }
}
