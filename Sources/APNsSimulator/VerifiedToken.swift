import Crypto
import Foundation
import NIOHPACK

/// Claims of a provider token whose signature verified.
struct VerifiedToken {
    var jwt: String
    var keyID: String
    var issuedAt: Int64
    /// The `iss` claim, which the key's team matched.
    var teamID: String = ""
}
