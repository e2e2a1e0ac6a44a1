import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Send slots taken for a paced campaign: the first is `firstIn` seconds
/// from now (by the database's clock), each next one `spacing` seconds later.
public struct PaceSlots: Sendable, Hashable {
    public var firstIn: Double
    public var spacing: Double

    public init(firstIn: Double, spacing: Double) {
        self.firstIn = firstIn
        self.spacing = spacing
    }

    /// When the `index`th slot comes, counted from `now`.
    public func slot(_ index: Int, from now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        now + .seconds(firstIn + spacing * Double(index))
    }
}
