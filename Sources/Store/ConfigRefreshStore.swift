import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// The ledger statements of config refresh pushes: planned per campaign with
/// one set-based statement, claimed like any delivery (`FOR UPDATE SKIP
/// LOCKED`), recorded with `DeliveryLedger.record`.
public struct ConfigRefreshStore: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Scheduled campaigns with a category whose `send_at` is still ahead, at
    /// most `lead` away. (A campaign already due is sent at once: a refresh
    /// push could not reach the app before it.)
    public func upcoming(lead: TimeInterval) async throws -> [UpcomingCategoryCampaign] {
        let rows = try await client.query(try SQLQueries.named("config-refresh/upcoming").query(["lead": .value(lead)]), logger: logger)
        var out: [UpcomingCategoryCampaign] = []
        for try await (id, name, category, segment, rule, apps) in rows.decode((Int64, String, String, String?, String, [String]?).self) {
            let json = (try? JSONDecoder().decode(JSONValue.self, from: Data(rule.utf8))) ?? .object([:])
            out.append(UpcomingCategoryCampaign(campaignID: id, name: name, categoryID: category, segmentName: segment,
                                                segmentRule: json, apps: apps))
        }
        return out
    }

    /// The apps and locales (the device's own, else its user's) of the
    /// audience's devices: each pair has a document of its own.
    public func audienceLocales(segmentRule: JSONValue, apps: [String]?) async throws -> [AppLocale] {
        let statement = try SQLQueries.named("config-refresh/audience-locales")
        let segment = try SegmentCompiler(firstPlaceholder: statement.parameters.count + 1, deviceAlias: "dv", userAlias: "u")
            .compile(segmentRule)
        let query = try statement.query(["apps": .value(apps)], fragments: ["segment": segment.sql]) { $0.append(segment: segment) }
        var out: [AppLocale] = []
        for try await (app, locale) in try await client.query(query, logger: logger).decode((String, String).self) {
            out.append(AppLocale(app: app, locale: locale))
        }
        return out
    }

    /// Queues one refresh push per audience device that does not have the
    /// category's current definition (its reported config lacks it, or it
    /// never reported one), at most once per device and config version.
    /// `current` maps each audience app and locale to its current document's
    /// ETag and the hash of the category in that document; a device of
    /// another app or locale gets none.
    /// Returns the rows queued now.
    public func plan(campaign: Int64, category: String, current: [AppLocale: (etag: String, categoryHash: String)],
                     segmentRule: JSONValue) async throws -> Int {
        guard !current.isEmpty else { return 0 }
        let keys = Array(current.keys)
        let statement = try SQLQueries.named("config-refresh/plan")
        // The segment's condition, compiled for this statement: its binds follow the statement's own.
        let segment = try SegmentCompiler(firstPlaceholder: statement.parameters.count + 1, deviceAlias: "dv", userAlias: "u")
            .compile(segmentRule)
        let query = try statement.query([
            "campaign": .value(campaign), "category": .value(category),
            "apps": .value(keys.map(\.app)), "locales": .value(keys.map(\.locale)),
            "etags": .value(keys.map { current[$0]?.etag ?? "" }), "hashes": .value(keys.map { current[$0]?.categoryHash ?? "" }),
        ], fragments: ["segment": segment.sql]) { $0.append(segment: segment) }
        for try await n in try await client.query(query, logger: logger).decode(Int64.self) { return Int(n) }
        return 0
    }


    /// Claims up to `limit` queued refresh pushes for `run`. Rows whose device
    /// was invalidated meanwhile are skipped.
    /// Like campaign deliveries, a claim is a lease of `lease` that the run
    /// renews; a lapsed lease (a run that died) may be claimed again.
    public func claim(run: Int64, limit: Int, lease: Duration, excludingApps apps: [String] = []) async throws -> [ClaimedRefresh] {
        let seconds = Double(lease.components.seconds)
        let rows = try await client.query(try SQLQueries.named("config-refresh/claim").query(
            ["seconds": .value(seconds), "run": .value(run), "limit": .value(limit)],
            fragments: ["claimable": DeliveryLedger.claimable("d"), "not_of_apps": DeliveryLedger.notOfApps("d", apps)]),
            logger: logger)
        var out: [ClaimedRefresh] = []
        for try await (id, device, token, env, etag, apnsID, attempts, app, expiration) in rows.decode(
            (Int64, Int64, String, APNsEnvironment, String, UUID, Int32, String, Int64?).self) {
            out.append(ClaimedRefresh(deliveryID: id, deviceID: device, deviceToken: token, environment: env, etag: etag,
                                      apnsID: apnsID, expiration: expiration.map { Int($0) }, attempts: Int(attempts),
                                      app: app))
        }
        return out
    }

    /// How long until the next queued refresh push may be sent, when one is
    /// queued at all (a retry's backoff).
    public func nextDue(excludingApps apps: [String] = []) async throws -> Duration? {
        let rows = try await client.query(try SQLQueries.named("config-refresh/next-due").query(
            [:], fragments: ["not_of_apps": DeliveryLedger.notOfApps("d", apps)]), logger: logger)
        for try await seconds in rows.decode(Double.self) { return .milliseconds(Int64(seconds * 1000)) }
        return nil
    }
}
