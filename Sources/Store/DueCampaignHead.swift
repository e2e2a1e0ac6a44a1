import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What a run orders its due campaigns by.
public struct DueCampaignHead: Sendable, Hashable {
    public var id: Int64
    /// nil: a kind this build does not know (the campaign fails when loaded, naming it).
    public var kind: CampaignKind?
    public var interruptionLevel: String?
    public var sendAt: Date

    public init(id: Int64, kind: CampaignKind?, interruptionLevel: String?, sendAt: Date) {
        self.id = id
        self.kind = kind
        self.interruptionLevel = interruptionLevel
        self.sendAt = sendAt
    }
}
