import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import ServiceLifecycle

/// No server of a multi-host `DATABASE_URL` fits its `target_session_attrs` now (a failover
/// under way), or the one in use was dropped while the call waited. Transient.
public struct DatabaseServerUnavailable: Error, CustomStringConvertible {
    public let servers: [String]
    public let target: DatabaseConfiguration.TargetSession
    public let cause: String?

    public var description: String {
        "no database server of \(servers.joined(separator: ",")) takes \(target.rawValue) sessions now"
            + (cause.map { " (\($0))" } ?? "")
    }
}
