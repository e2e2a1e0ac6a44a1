import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What a run did to its series before looking for due campaigns.
public struct SeriesSummary: Sendable, Hashable {
    /// Occurrences this run made (others may have been made by another run).
    public var made: [Int64] = []
    /// Series that ended (no moment left, or an on-entry series past its end).
    public var completed = 0
    /// On-entry occurrences that look at their segment again in this run.
    public var reopened = 0

    public init() {}
}
