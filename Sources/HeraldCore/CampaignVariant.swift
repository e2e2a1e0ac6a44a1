import Foundation

/// One A/B variant of a campaign (`campaign_variants`): its own text in
/// the locales it gives, optionally its own media, and its share of the
/// audience in whole percent.
public struct CampaignVariant: Sendable, Hashable {
    public var name: String
    public var share: Int
    /// Replaces the campaign's text in these locales; the others keep the campaign's.
    public var content: [String: LocalizedText]
    /// Replaces the campaign's media (with `mediaType`) when set.
    public var mediaURL: String?
    public var mediaType: String?
    /// Its devices at each user's best hour, or not (nil: as the campaign).
    public var bestHour: Bool?

    public init(name: String, share: Int, content: [String: LocalizedText], mediaURL: String? = nil, mediaType: String? = nil) {
        self.name = name
        self.share = share
        self.content = content
        self.mediaURL = mediaURL
        self.mediaType = mediaType
    }
}
