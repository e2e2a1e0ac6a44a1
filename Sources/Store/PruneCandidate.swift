import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A finished campaign whose ledger `herald prune` may drop.
public struct PruneCandidate: Sendable, Hashable {
    public var campaignID: Int64
    public var name: String
    public var status: String
    /// The latest of its completion and its ledger's last write.
    public var lastActivity: Date
    /// Its rows in the ledger (campaign deliveries and test sends).
    public var deliveries: Int64
    /// Its own partition (`deliveries_c<ID>`), or nil when its rows are in
    /// the DEFAULT partition (written before it had one).
    public var partition: String?
}
