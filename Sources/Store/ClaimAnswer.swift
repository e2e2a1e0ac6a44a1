import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What a claim found: the rows claimed, where the next claim reads on, the
/// campaign's status when none was claimed, and whether the run is still live.
public struct ClaimAnswer: Sendable, Hashable {
    public var deliveries: [ClaimedDelivery]
    /// The last row the claim read: the next one reads on from there.
    public var end: Int64
    /// The campaign's status, read when nothing was claimed (a pause or cancel shows here).
    public var status: CampaignStatus?
    /// Another run declared this one gone: it must stop.
    public var runGone: Bool
    /// Rows the claim's windows read (claimed or not): how far the claims
    /// have come through the campaign's ledger.
    public var read: Int = 0
}
