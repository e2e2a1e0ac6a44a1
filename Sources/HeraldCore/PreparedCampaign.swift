/// What a run needs to send a campaign, checked before any device is
/// touched: the segment compiles, its variants (if any) make a valid set and
/// no device's payload, of any variant, can exceed 4096 bytes.
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
        if let problem = campaign.variantProblem { throw problem }
        builder = try PayloadBuilder(campaign: campaign)
        if builder.variables.contains(.code), campaign.codePool == nil {
            throw CampaignProblem("its templates give {{ code }} but it draws from no pool: UPDATE campaigns SET code_pool = '<pool>' WHERE id = \(campaign.id);")
        }
        let variants: [String?] = campaign.variants.isEmpty ? [nil] : campaign.variants.map(\.name)
        for variant in variants {
            for (locale, bytes) in builder.largestPayloads(variant: variant) where bytes > PayloadBuilder.maxBytes {
                let which = variant.map { "variant \"\($0)\": " } ?? ""
                throw CampaignProblem(
                    "\(which)the payload for locale \"\(locale)\" can reach \(bytes) bytes; APNs accepts at most \(PayloadBuilder.maxBytes): shorten its text, custom or sensitive fields")
            }
        }
    }
}
