import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Campaigns' lifecycle: which are due, loading one to send, and moving its
/// status (`scheduled → running → completed`, or `failed` with a reason).
public struct CampaignStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Ends campaigns whose time is up: queued deliveries become `expired`.
    public func expireCampaigns() async throws -> Int {
        let rows = try await client.query(try SQLQueries.named("campaigns/expire").query([:]), logger: logger)
        for try await n in rows.decode(Int64.self) { return Int(n) }
        return 0
    }

    /// The campaigns a run sends now, by `send_at` then id, with what orders them further (`DueOrder`).
    public func dueCampaigns() async throws -> [DueCampaignHead] {
        let rows = try await client.query(try SQLQueries.named("campaigns/due").query([:]), logger: logger)
        var heads: [DueCampaignHead] = []
        for try await (id, kind, level, sendAt) in rows.decode((Int64, String, String?, Date).self) {
            heads.append(DueCampaignHead(id: id, kind: CampaignKind(rawValue: kind), interruptionLevel: level, sendAt: sendAt))
        }
        return heads
    }

    /// The status a sending run goes by: a campaign whose approval is
    /// required and missing (withdrawn by a change) waits as a paused one does.
    public func sendingStatus(_ id: Int64) async throws -> CampaignStatus? {
        let rows = try await client.query("""
            SELECT CASE WHEN status IN ('scheduled', 'running') AND NOT herald_approved(id) THEN 'paused' ELSE status END
            FROM campaigns WHERE id = \(id)
            """, logger: logger)
        for try await s in rows.decode(String.self) { return CampaignStatus(rawValue: s) }
        return nil
    }

    /// Whether a campaign needs an approval and has one (`herald_approved`).
    public func approval(_ id: Int64) async throws -> CampaignApproval? {
        let rows = try await client.query("""
            SELECT coalesce((SELECT require_approval FROM settings), false), c.created_by, c.approved_by, c.approved_at
            FROM campaigns c WHERE c.id = \(id)
            """, logger: logger)
        for try await (required, author, approver, at) in rows.decode((Bool, String, String?, Date?).self) {
            return CampaignApproval(required: required, author: author, approvedBy: approver, approvedAt: at)
        }
        return nil
    }

    /// Loads one campaign. A row that cannot be read throws a `StoreError`
    /// naming the bad column; the caller fails that campaign only.
    public func loadCampaign(_ id: Int64) async throws -> DueCampaign {
        let rows = try await client.query(try SQLQueries.named("campaigns/load").query(["campaign": .value(id)]), logger: logger)
        var loaded: DueCampaign?
        for try await row in rows {
            let r = row.makeRandomAccess()
            let kindText = try r[2].decode(String.self)
            guard let kind = CampaignKind(rawValue: kindText) else {
                throw StoreError.database("unknown kind \"\(kindText)\"")
            }
            let statusText = try r[3].decode(String.self)
            let content = try Self.decodeContent(try r[4].decode(String.self))
            let custom = try Self.decodeObject(try r[9].decode(String.self), column: "custom")
            let sensitive = try r[10].decode(String?.self).map { try Self.decodeObject($0, column: "sensitive") }
            let campaign = Campaign(
                id: try r[0].decode(Int64.self),
                name: try r[1].decode(String.self),
                kind: kind,
                status: CampaignStatus(rawValue: statusText) ?? .scheduled,
                content: content,
                defaultLocale: try r[5].decode(String.self),
                mediaURL: try r[6].decode(String?.self),
                mediaType: try r[7].decode(String?.self),
                categoryID: try r[8].decode(String?.self),
                custom: custom,
                sensitive: sensitive,
                sendAt: try r[11].decode(Date.self),
                expiresAt: try r[12].decode(Date?.self),
                priority: Int(try r[13].decode(Int32.self)),
                collapseID: try r[14].decode(String?.self),
                threadID: try r[15].decode(String?.self),
                interruptionLevel: try r[16].decode(String?.self),
                relevanceScore: try r[17].decode(Double?.self),
                sound: try r[18].decode(String?.self),
                quietHours: try r[19].decode(Bool.self),
                frequencyCapped: try r[20].decode(Bool.self))
            let rule = try JSONDecoder().decode(JSONValue.self, from: Data(try r[22].decode(String.self).utf8))
            let codePool = try r[29].decode(String?.self)
            let bestHour = try r[30].decode(Bool?.self)
            var paced = campaign
            paced.codePool = codePool
            paced.bestHour = bestHour ?? false
            if let sale = try r[31].decode(String?.self) {
                paced.liveActivity = .object(try Self.decodeObject(sale, column: "live_activity"))
            }
            paced.saleID = try r[32].decode(Int64?.self)
            paced.saleStep = try r[33].decode(Int32?.self).map(Int.init)
            paced.widgetsPush = try r[34].decode(Bool.self)
            paced.widgetsOf = try r[35].decode(Int64?.self)
            paced.journeyID = try r[36].decode(Int64?.self)
            if let rate = try r[23].decode(Int32?.self) {
                paced.pace = .perMinute(Int(rate))
            } else if let seconds = try r[24].decode(Double?.self) {
                paced.pace = .within(seconds)
            }
            var due = DueCampaign(campaign: paced, segmentName: try r[21].decode(String?.self), segmentRule: rule)
            if let series = try r[25].decode(Int64?.self), let n = try r[26].decode(Int32?.self) {
                due.series = (series, Int(n))
            }
            if let entrySeries = try r[27].decode(Int64?.self) {
                due.entry = (entrySeries, try r[28].decode(Double?.self))
            }
            loaded = due
        }
        guard var due = loaded else { throw StoreError.notFound("campaign \(id) does not exist") }
        due.campaign.variants = try await loadVariants(id)
        return due
    }

    /// A campaign's A/B variants in name order (byte order, as the analyst
    /// views order them); a row that cannot be read throws naming the variant.
    func loadVariants(_ id: Int64) async throws -> [CampaignVariant] {
        // An occurrence's variants are copies: their best hour is the series' (`campaign_variants.best_hour`).
        let rows = try await client.query("""
            SELECT v.name, v.share, v.content::text, v.media_url, v.media_type, coalesce(sv.best_hour, v.best_hour)
            FROM campaign_variants v JOIN campaigns c ON c.id = v.campaign_id
            LEFT JOIN campaign_variants sv ON sv.campaign_id = c.series_id AND sv.name = v.name
            WHERE v.campaign_id = \(id) ORDER BY v.name COLLATE "C"
            """, logger: logger)
        var variants: [CampaignVariant] = []
        for try await (name, share, content, url, type, best) in rows.decode((String, Int32, String, String?, String?, Bool?).self) {
            let text: [String: LocalizedText]
            do {
                text = try Self.decodeContent(content)
            } catch {
                throw StoreError.database("variant \"\(name)\": \(error.message)")
            }
            var variant = CampaignVariant(name: name, share: Int(share), content: text, mediaURL: url, mediaType: type)
            variant.bestHour = best
            variants.append(variant)
        }
        return variants
    }

    static func decodeContent(_ text: String) throws(StoreError) -> [String: LocalizedText] {
        guard case .object(let locales)? = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            throw StoreError.database("content is not a JSON object")
        }
        var out: [String: LocalizedText] = [:]
        for (locale, entry) in locales {
            do {
                out[locale] = try LocalizedText(json: entry)
            } catch {
                throw StoreError.database("content for locale \"\(locale)\" \(error.message)")
            }
        }
        return out
    }

    static func decodeObject(_ text: String, column: String) throws(StoreError) -> [String: JSONValue] {
        guard case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            throw StoreError.database("\(column) is not a JSON object")
        }
        return o
    }

    /// Marks a campaign failed with a reason a marketer can act on.
    public func failCampaign(_ id: Int64, reason: String) async throws {
        try await client.query("""
            UPDATE campaigns SET status = 'failed', failure_reason = \(reason), completed_at = now()
            WHERE id = \(id) AND status IN ('scheduled', 'running', 'paused')
            """, logger: logger)
    }

    /// Marks the campaign completed when nothing of it is left to send and
    /// it takes no more entrants (an on-entry occurrence, until `open_until`).
    /// Returns true when it did.
    public func completeIfDone(_ campaign: Int64) async throws -> Bool {
        let rows = try await client.query(try SQLQueries.named("campaigns/complete-if-done").query(["campaign": .value(campaign)]),
                                          logger: logger)
        for try await _ in rows.decode(Int64.self) { return true }
        return false
    }

    /// The apps a campaign goes to (names in `apps`): nil for every app.
    public func apps(_ id: Int64) async throws -> [String]? {
        let rows = try await client.query("SELECT apps FROM campaigns WHERE id = \(id)", logger: logger)
        for try await apps in rows.decode([String]?.self) { return apps }
        return nil
    }

    /// The campaign's status as stored (including those a run never reads, such as `archived`).
    public func storedStatus(_ id: Int64) async throws -> String? {
        let rows = try await client.query("SELECT status FROM campaigns WHERE id = \(id)", logger: logger)
        for try await s in rows.decode(String.self) { return s }
        return nil
    }

    /// Takes the next `count` send slots of a paced campaign
    /// (`herald_pace_reserve`): nil when the campaign has no pace.
    public func reservePace(campaign: Int64, count: Int) async throws -> PaceSlots? {
        let rows = try await client.query(
            "SELECT first_in, spacing FROM herald_pace_reserve(\(campaign), \(Int32(clamping: count)))", logger: logger)
        for try await (first, spacing) in rows.decode((Double?, Double?).self) {
            guard let first, let spacing else { return nil }
            return PaceSlots(firstIn: first, spacing: spacing)
        }
        return nil
    }

}
