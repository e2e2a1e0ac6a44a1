import HeraldCore
import Store

/// The order a run starts its due campaigns in (DESIGN, "How a run
/// behaves", point 16): those that interrupt first (time-sensitive or
/// critical; a flash sale is time-sensitive unless its row says otherwise),
/// then by `send_at`, then by id. Up to `HERALD_CAMPAIGNS_AT_ONCE` of them
/// send at once; the next starts when one ends.
enum DueOrder {
    static func sorted(_ due: [DueCampaignHead]) -> [Int64] {
        due.sorted { a, b in
            let (x, y) = (interrupts(a), interrupts(b))
            if x != y { return x }
            if a.sendAt != b.sendAt { return a.sendAt < b.sendAt }
            return a.id < b.id
        }.map(\.id)
    }

    private static func interrupts(_ head: DueCampaignHead) -> Bool {
        guard let kind = head.kind else { return false }
        return Campaign.interrupts(kind: kind, chosen: head.interruptionLevel)
    }
}
