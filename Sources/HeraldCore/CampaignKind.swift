import Foundation

/// The three kinds of campaign (DESIGN, "The three kinds of campaign").
public enum CampaignKind: String, Sendable, Hashable, CaseIterable {
    case poster
    case flashSale = "flash_sale"
    case feedback
}
