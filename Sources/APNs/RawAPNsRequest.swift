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

/// A request exactly as given, for testing servers (the simulator's validation).
@_spi(Testing)
public struct RawAPNsRequest: Sendable {
    public enum Authorization: Sendable {
        /// The client's current provider token.
        case current
        case none
        case custom(String)
    }

    public var method: String
    public var path: String
    /// Regular headers, sent as given and in order (duplicates allowed).
    public var headers: [(String, String)]
    public var authorization: Authorization
    public var body: [UInt8]

    public init(
        method: String = "POST",
        path: String,
        headers: [(String, String)],
        authorization: Authorization = .current,
        body: [UInt8]
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.authorization = authorization
        self.body = body
    }
}
