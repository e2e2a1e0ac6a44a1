import Foundation
import HeraldCore
import PostgresNIO

/// A range of a campaign's ledger ids a run holds (`delivery_spans`): its batch rows
/// above `after`, up to `through`.
public struct SpanClaim: Sendable, Hashable {
    public var campaign: Int64
    public var after: Int64
    public var through: Int64
    /// Taken over from a run that is gone or whose lease lapsed (else a new range).
    public var takenOver: Bool

    public init(campaign: Int64, after: Int64, through: Int64, takenOver: Bool = false) {
        self.campaign = campaign
        self.after = after
        self.through = through
        self.takenOver = takenOver
    }
}
