import Foundation
import HeraldCore
import Logging
import PostgresNIO

public struct RunFigures: Sendable, Hashable {
    public var campaigns = 0
    public var targeted = 0
    public var sent = 0
    public var invalid = 0
    public var failed = 0
    public var retried = 0
    public var skipped = 0
    public var expired = 0
    /// Deliveries given back to the queue: transient answers, unsent claims.
    public var requeued = 0

    public init() {}
}
