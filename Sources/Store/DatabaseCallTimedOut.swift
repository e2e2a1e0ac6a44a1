import Lifecycle
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import PostgresNIO

/// One database call took longer than its deadline (a server that stopped
/// answering, a pool waiting for a server that is down).
public struct DatabaseCallTimedOut: Error, CustomStringConvertible {
    public let what: String
    public var description: String { "\(what): the database did not answer in time" }
}
