import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// The connections of one pool: one endpoint, one credential.
struct PoolKey: Hashable {
    var endpoint: Endpoint
    /// Index of the credential in `APNsClient`'s list.
    var credential: Int
}
