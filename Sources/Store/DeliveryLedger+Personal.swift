import HeraldCore
import PostgresNIO

extension DeliveryLedger {
    /// Each delivery's values of the variables its campaign's templates name
    /// (DESIGN, "Personal text"): from its user (`external_id`, attributes),
    /// its device, and the campaign's recipient data; one statement for a
    /// claimed batch. The values of `campaign.name` and `device.locale` are
    /// the builder's own, and come back nil.
    public func personalValues(campaign: Int64, deliveries ids: [Int64],
                               variables: [Template.Variable]) async throws -> [Int64: PersonalValues] {
        guard !ids.isEmpty else { return [:] }
        var binds = PostgresBindings(capacity: 2 + variables.count)
        binds.append(ids)
        binds.append(campaign)
        // Identifiers come from code; every key a marketer wrote is a bind.
        var columns: [String] = []
        var recipients = false
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
                binds.append(path)
                columns.append("u.attributes #>> $\(binds.count)::text[]")
            case (.recipient, let path):
                binds.append(path)
                columns.append("r.data #>> $\(binds.count)::text[]")
                recipients = true
            }
        }
        let sql = """
            SELECT d.id, u.time_zone\(columns.map { ", " + $0 }.joined())
            FROM deliveries d
            JOIN users u ON u.id = d.user_id
            JOIN devices dv ON dv.id = d.device_id
            \(recipients ? "LEFT JOIN campaign_recipients r ON r.campaign_id = d.campaign_id AND r.external_id = u.external_id" : "")
            WHERE d.campaign_id = $2 AND d.id = ANY ($1::int8[])
            """
        var out: [Int64: PersonalValues] = [:]
        out.reserveCapacity(ids.count)
        for try await row in try await client.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) {
            var cells = RowCells(row)
            let id = try cells.next(Int64.self)
            let zone = try cells.next(String.self)
            var values: [String?] = []
            values.reserveCapacity(variables.count)
            for _ in variables { values.append(try cells.next(String?.self)) }
            out[id] = PersonalValues(values: values, timeZone: zone)
        }
        return out
    }
}
