import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What one claim read and took: the rows claimed, the last row of the
/// window it read (where the next claim reads on) and whether the window
/// was full (more rows may follow).
public struct ClaimWindow: Sendable, Hashable {
    public var deliveries: [ClaimedDelivery]
    public var end: Int64
    public var full: Bool
    /// False when the run is no longer `running`: another run declared it
    /// gone (its process seemed to have ended, or it stopped renewing). It
    /// claims nothing more and must stop: its deliveries are another's now.
    public var runLive: Bool
    /// False when the campaign may not be sent now (paused, cancelled, its approval withdrawn):
    /// nothing was claimed, and no window further on would claim anything either.
    public var campaignLive = true
    /// Rows the window read.
    public var read = 0

    public init(deliveries: [ClaimedDelivery], end: Int64, full: Bool, runLive: Bool = true) {
        self.deliveries = deliveries
        self.end = end
        self.full = full
        self.runLive = runLive
    }
}
