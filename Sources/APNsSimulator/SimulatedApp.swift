import Crypto
import Foundation

/// An app the simulator serves: its topic (bundle id) and how providers authenticate for it.
public struct SimulatedApp: Sendable {
    public enum Auth: Sendable {
        /// Provider tokens of this team, signed by one of these keys (key id → public key). Every
        /// key of a team signs for every token app of that team, as at Apple.
        case token(teamID: String, keys: [String: P256.Signing.PublicKey])
        /// A client certificate that chains to the simulator's client CA and names the topic.
        case certificate
    }

    public var topic: String
    public var auth: Auth

    public init(topic: String, auth: Auth) {
        self.topic = topic
        self.auth = auth
    }
}
