import Foundation

public enum CampaignStatus: String, Sendable, Hashable {
    case draft, scheduled, running, paused, completed, cancelled, failed
}
