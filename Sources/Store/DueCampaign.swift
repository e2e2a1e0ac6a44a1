import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A campaign that is due, with its segment.
public struct DueCampaign: Sendable {
    public var campaign: Campaign
    public var segmentName: String?
    public var segmentRule: JSONValue
    /// The series it is an occurrence of (`campaigns.series_id`), and which.
    public var series: (id: Int64, occurrence: Int)?
    /// Sent on segment entry: whoever in the segment has not had the series
    /// (`series`: its id, or this campaign's own for the series row), or not
    /// within `resendAfter` seconds.
    public var entry: (series: Int64, resendAfter: Double?)?

    public init(campaign: Campaign, segmentName: String?, segmentRule: JSONValue) {
        self.campaign = campaign
        self.segmentName = segmentName
        self.segmentRule = segmentRule
    }
}
