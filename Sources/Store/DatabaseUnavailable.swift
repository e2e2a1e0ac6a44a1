import Lifecycle
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import PostgresNIO

/// The database stayed unreachable (or kept refusing with transient errors)
/// for longer than the run's budget. The run stops; the next one continues.
public struct DatabaseUnavailable: Error, CustomStringConvertible {
    public let what: String
    public let cause: String
    public let budget: Duration
    public var description: String {
        "the database was unavailable for more than \(budget.components.seconds) s (\(what): \(cause))"
    }
}
