import Foundation
import HeraldCore
import Lifecycle
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// A credential as the client uses it.
struct ClientCredential: Sendable {
    enum Kind: Sendable {
        case token(ProviderTokenStore)
        case certificate(APNsClientCertificate)
    }

    var name: String
    var kind: Kind
}
