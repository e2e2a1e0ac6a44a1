import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What `PruneStore.prune` did with one campaign.
public enum PruneResult: Sendable, Hashable {
    case pruned(PruneOutcome)
    /// Left alone: it is no longer finished, or was pruned meanwhile.
    case left(reason: String)
    /// A lock it needed was busy for longer than the lock timeout (a run
    /// or a long query held it); nothing was written. Try again later.
    case busy
}
