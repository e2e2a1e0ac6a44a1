/// Why a campaign cannot go out. The message is for the marketer who wrote it.
public struct CampaignProblem: Error, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What a run needs to send a campaign, checked before any device is
/// touched: the segment compiles and no device's payload can exceed 4096 bytes.
public struct PreparedCampaign: Sendable {
    public let campaign: Campaign
    public let builder: PayloadBuilder
    /// The segment's rule, checked: it compiles. The statement that selects
    /// the audience compiles it again into its own SQL (the store owns it).
    public let segmentRule: JSONValue

    public init(campaign: Campaign, segmentName: String?, segmentRule: JSONValue) throws(CampaignProblem) {
        self.campaign = campaign
        self.segmentRule = segmentRule
        do {
            _ = try SegmentCompiler().compile(segmentRule)
        } catch {
            let which = segmentName.map { "segment \"\($0)\"" } ?? "segment"
            throw CampaignProblem("\(which): \(error.description)")
        }
        guard campaign.content[campaign.defaultLocale] != nil else {
            throw CampaignProblem("content has no entry for the default locale \"\(campaign.defaultLocale)\"")
        }
        builder = PayloadBuilder(campaign: campaign)
        for (locale, bytes) in builder.largestPayloads() where bytes > PayloadBuilder.maxBytes {
            throw CampaignProblem(
                "the payload for locale \"\(locale)\" can reach \(bytes) bytes; APNs accepts at most \(PayloadBuilder.maxBytes): shorten its text, custom or sensitive fields")
        }
    }
}
