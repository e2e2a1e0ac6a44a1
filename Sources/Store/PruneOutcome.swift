import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What pruning one campaign did.
public struct PruneOutcome: Sendable, Hashable {
    public var candidate: PruneCandidate
    /// Rows dropped (their figures kept in the pruned_* tables).
    public var deliveries: Int64
    /// The export file, when asked for one.
    public var exportedTo: URL?
}
