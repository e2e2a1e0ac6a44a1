/// Why a campaign cannot go out. The message is for the marketer who wrote it.
public struct CampaignProblem: Error, Hashable, CustomStringConvertible {
    public let message: String
    /// An operator must act (an app's APNs account, not the campaign's rows): the run exits 1.
    public let personNeeded: Bool
    public init(_ message: String, personNeeded: Bool = false) {
        self.message = message
        self.personNeeded = personNeeded
    }
    public var description: String { message }
}
