import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A campaign that will soon use a category: its audience may need the
/// current notification config first (DESIGN, contract 7).
public struct UpcomingCategoryCampaign: Sendable, Hashable {
    public var campaignID: Int64
    public var name: String
    public var categoryID: String
    public var segmentName: String?
    public var segmentRule: JSONValue
    /// The apps it goes to (nil: every app).
    public var apps: [String]?
}
