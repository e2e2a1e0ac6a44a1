import HeraldCore
import PostgresNIO

extension DeliveryLedger {
    /// Each delivery's values of the variables its campaign's templates name
    /// (DESIGN, "Personal text"): from its user (`external_id`, attributes),
    /// its device, and the campaign's recipient data; one statement for a
    /// claimed batch. The values of `campaign.name` and `device.locale` are
    /// the builder's own, and come back nil.
    /// A code not drawn yet reads as `undrawnCode` (a dry run, a preview);
    /// a test send's delivery always reads it, and never draws one.
    /// `drawn`: the run drew these deliveries' codes just before (a code
    /// missing then is none left, never the placeholder).
    public func personalValues(campaign: Int64, deliveries ids: [Int64],
                               variables: [Template.Variable], drawn: Bool = false) async throws -> [Int64: PersonalValues] {
        guard !ids.isEmpty else { return [:] }
        var out: [Int64: PersonalValues] = [:]
        out.reserveCapacity(ids.count)
        let query = try Self.personalQuery(campaign: campaign, variables: variables, deliveries: ids, drawn: drawn)
        for try await row in try await client.query(query, logger: logger) {
            var cells = RowCells(row)
            let (id, values) = try Self.personalRow(&cells, variables: variables)
            out[id] = values
        }
        return out
    }

    /// The statement that reads the values: of `ids`, or (nil) of every
    /// queued delivery of the campaign, with each one's locale, variant and
    /// user (a preview, inside its rolled-back snapshot).
    static func personalQuery(campaign: Int64, variables: [Template.Variable], deliveries ids: [Int64]?,
                              drawn: Bool = false) throws -> PostgresQuery {
        var binds: [String: NamedQuery.Bind] = ["campaign": .value(campaign)]
        // Identifiers come from code; every key a marketer wrote is a bind.
        var columns: [String] = []
        var recipients = false
        var codes = false
        func key(_ path: [String]) -> String {
            let name = "key_\(binds.count)"
            binds[name] = .value(path)
            return ":\(name)::text[]"
        }
        for v in variables {
            switch (v.root, v.path) {
            case (.campaign, _), (.device, ["locale"]):
                columns.append("NULL::text")
            case (.device, ["app_version"]):
                columns.append("dv.app_version")
            case (.device, _):
                columns.append("u.time_zone")
            case (.user, ["external_id"]):
                columns.append("u.external_id")
            case (.user, let path):
                columns.append("u.attributes #>> \(key(path))")
            case (.recipient, let path):
                columns.append("r.data #>> \(key(path))")
                recipients = true
            case (.code, _):
                columns.append("CASE WHEN d.kind = 'test' THEN '\(Self.undrawnCode)' ELSE coalesce(pc.code, CASE WHEN \(!drawn) AND d.status IN ('queued', 'batch') THEN '\(Self.undrawnCode)' END) END")
                codes = true
            }
        }
        binds["ids"] = .value(ids ?? [])
        binds["queued"] = .value(ids == nil)
        return try SQLQueries.named("ledger/personal-values").filling([
            "columns": columns.map { ", " + $0 }.joined(),
            "recipients": recipients ? "LEFT JOIN campaign_recipients r ON r.campaign_id = d.campaign_id AND r.external_id = u.external_id" : "",
            "codes": codes ? "LEFT JOIN pool_codes pc ON pc.campaign_id = d.campaign_id AND pc.user_id = d.user_id" : "",
        ]).query(binds)
    }

    static func personalRow(_ cells: inout RowCells, variables: [Template.Variable]) throws -> (Int64, PersonalValues) {
        let id = try cells.next(Int64.self)
        let zone = try cells.next(String.self)
        var values: [String?] = []
        values.reserveCapacity(variables.count)
        for _ in variables { values.append(try cells.next(String?.self)) }
        return (id, PersonalValues(values: values, timeZone: zone))
    }

    /// One queued delivery as a preview renders it.
    public struct PersonalSample: Sendable {
        public var deliveryID: Int64
        public var locale: String
        public var variant: String?
        public var user: String
        public var values: PersonalValues
    }

    /// What `{{ code }}` reads before a code is drawn: in a dry run, a
    /// preview and a test send, which never draw one.
    public static let undrawnCode = "CODE-DRAWN-AT-SEND"

    /// Draws a code from the campaign's pool for each user of these claimed
    /// deliveries that has none yet (`pool_codes`): the oldest free codes in
    /// order, each to one user. A user whose code another worker is drawing
    /// at once, or whose free codes another worker holds for a moment, is
    /// drawn again; a user left without one when the pool has no free code
    /// is skipped by the run ("none left").
    public func drawCodes(campaign: Int64, pool: String, deliveries ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        for _ in 0..<50 {
            let need: Int64, drew: Int64
            do {
                (need, drew) = try await drawOnce(campaign: campaign, pool: pool, deliveries: ids)
            } catch where StoreError.sqlState(of: error) == "23505" {
                continue  // the same user drawn by another worker at once: read again
            }
            if drew == need { return }
            if drew == 0 {
                let free = try await client.query("""
                    SELECT EXISTS (SELECT 1 FROM pool_codes pc WHERE pc.pool = \(pool) AND pc.campaign_id IS NULL)
                    """, logger: logger).decode(Bool.self)
                var any = false
                for try await f in free { any = f }
                if !any { return }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// The free codes are read in the pool's order through its partial
    /// index, at most one a delivery of the batch: a limit the planner knows, so it never sorts the whole pool.
    private func drawOnce(campaign: Int64, pool: String, deliveries ids: [Int64]) async throws -> (need: Int64, drew: Int64) {
        let rows = try await client.query(try SQLQueries.named("ledger/draw-codes").query([
            "campaign": .value(campaign), "ids": .value(ids), "pool": .value(pool), "limit": .value(ids.count),
        ]), logger: logger)
        for try await (need, drew) in rows.decode((Int64, Int64).self) { return (need, drew) }
        return (0, 0)
    }

    /// Whether a claim can read these variables itself (`claimNext`'s
    /// `personal`): every one but `code`, which is drawn after the claim,
    /// and keys the template grammar allows (letters, digits, `_`, `-`).
    /// Read by the claim, which has the device and user at hand: a second statement cost three index lookups a row.
    public static func claimReads(_ variables: [Template.Variable]) -> Bool {
        !variables.isEmpty && variables.allSatisfy { v in
            v.root != .code && v.path.allSatisfy { key in
                !key.isEmpty && key.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-" }
            }
        }
    }

    /// The claim's extra joins and columns for `variables` (none when empty).
    /// Keys are written as literals: `claimReads` holds them to letters,
    /// digits, `_` and `-`, so no quote can be among them.
    static func claimColumns(_ variables: [Template.Variable], campaign: Int64) -> (joins: String, returning: String, selected: String) {
        guard !variables.isEmpty else { return ("", "", "") }
        precondition(claimReads(variables), "a claim reads only the variables claimReads allows")
        var exprs: [String] = []
        var recipients = false
        func path(_ keys: [String]) -> String { "ARRAY[" + keys.map { "'\($0)'" }.joined(separator: ",") + "]::text[]" }
        for v in variables {
            switch (v.root, v.path) {
            case (.campaign, _), (.device, ["locale"]), (.code, _): exprs.append("NULL::text")
            case (.device, ["app_version"]): exprs.append("dv.app_version")
            case (.device, _): exprs.append("u.time_zone")
            case (.user, ["external_id"]): exprs.append("u.external_id")
            case (.user, let keys): exprs.append("u.attributes #>> \(path(keys))")
            case (.recipient, let keys):
                exprs.append("r.data #>> \(path(keys))")
                recipients = true
            }
        }
        let returning = ", u.time_zone AS p_tz" + exprs.enumerated().map { ", \($1) AS p\($0)" }.joined()
        let selected = ", c.p_tz" + variables.indices.map { ", c.p\($0)" }.joined()
        let joins = recipients ? "LEFT JOIN campaign_recipients r ON r.campaign_id = \(campaign) AND r.external_id = u.external_id" : ""
        return (joins, returning, selected)
    }
}
