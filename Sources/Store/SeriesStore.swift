import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// Recurring and on-entry campaigns (`herald_occurrence`): reads the active series,
/// asks `Series.step` what is due, and makes it. Every step is safe to
/// repeat and to race: an occurrence is made once, whoever gets there first.
public struct SeriesStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The series that may make occurrences now (scheduled or running, approved
    /// where approval is required), and the database's clock.
    public func activeSeries() async throws -> (series: [Series], now: Date) {
        try await load(try SQLQueries.named("series/load").filling(["which_series": """
            (s.repeat_unit IS NOT NULL OR s.on_segment_entry) AND s.status IN ('scheduled', 'running')
              AND herald_approved(s.id)
            """]).query([:]))
    }

    /// Campaign `id` as a series, whatever its status (nil: it is not one).
    public func series(_ id: Int64) async throws -> (series: Series, now: Date)? {
        let found = try await load(try SQLQueries.named("series/load").filling([
            "which_series": "s.id = :id AND (s.repeat_unit IS NOT NULL OR s.on_segment_entry)",
        ]).query(["id": .value(id)]))
        return found.series.first.map { ($0, found.now) }
    }

    private func load(_ query: PostgresQuery) async throws -> (series: [Series], now: Date) {
        let rows = try await client.query(query, logger: logger)
        var series: [Series] = []
        var now = Date()
        for try await row in rows {
            let r = row.makeRandomAccess()
            now = try r[14].decode(Date.self)
            let id = try r[0].decode(Int64.self)
            let sendAt = try r[9].decode(Date.self)
            let schedule: Series.Schedule
            if try r[7].decode(Bool.self) {
                schedule = .onEntry(resendAfter: try r[8].decode(Double?.self))
            } else {
                let unitText = try r[1].decode(String.self)
                guard let unit = Recurrence.Unit(rawValue: unitText) else {
                    throw StoreError.database("campaign \(id): unknown repeat_unit \"\(unitText)\"")
                }
                let local = try r[10].decode(Date?.self)
                let recurrence = Recurrence(
                    unit: unit, every: Int(try r[2].decode(Int32.self)), start: local ?? sendAt,
                    weekdays: (try r[3].decode([String]?.self) ?? []).compactMap(Recurrence.Weekday.init(rawValue:)),
                    dayOfMonth: try r[4].decode(Int32?.self).map(Int.init),
                    count: try r[5].decode(Int32?.self).map(Int.init),
                    until: try r[6].decode(Date?.self))
                schedule = .recurring(recurrence, local: local != nil)
            }
            series.append(Series(id: id, schedule: schedule, sendAt: sendAt, expiresAt: try r[11].decode(Date?.self),
                                 resumedAt: try r[12].decode(Date?.self),
                                 lastOccurrence: Int(try r[13].decode(Int32.self))))
        }
        return (series, now)
    }

    /// Takes every active series one step at the database's `now`.
    public func advance() async throws -> SeriesSummary {
        var summary = SeriesSummary()
        let (all, now) = try await activeSeries()
        for series in all {
            let step = series.step(now: now)
            var logger = self.logger
            logger[metadataKey: "series"] = "\(series.id)"
            if let occurrence = step.make {
                if let id = try await makeOccurrence(series.id, occurrence) {
                    summary.made.append(id)
                    logger.info("occurrence made", metadata: [
                        "occurrence": "\(occurrence.number)", "campaign": "\(id)", "skipped": "\(step.skipped)",
                    ])
                }
            } else if step.skipped > 0 {
                logger.debug("moments skipped", metadata: ["moments": "\(step.skipped)"])
            }
            if case .onEntry = series.schedule, !step.complete {
                summary.reopened += try await reopen(series.id)
            }
            if step.complete, try await complete(series.id) { summary.completed += 1 }
        }
        return summary
    }

    /// Makes an occurrence; nil when another run made it first.
    func makeOccurrence(_ series: Int64, _ o: Series.Occurrence) async throws -> Int64? {
        let rows = try await client.query("""
            SELECT herald_occurrence(\(series), \(Int32(o.number)), \(o.at), \(o.openUntil))
            """, logger: logger)
        for try await id in rows.decode(Int64?.self) { return id }
        return nil
    }

    func reopen(_ series: Int64) async throws -> Int {
        let rows = try await client.query("SELECT herald_reopen_entries(\(series))", logger: logger)
        for try await n in rows.decode(Int32.self) { return Int(n) }
        return 0
    }

    /// Ends a series with no moment left (its occurrences go on as campaigns of their own).
    func complete(_ series: Int64) async throws -> Bool {
        let rows = try await client.query(try SQLQueries.named("series/complete").query(["series": .value(series)]),
                                          logger: logger)
        for try await _ in rows.decode(Int64.self) { return true }
        return false
    }
}
