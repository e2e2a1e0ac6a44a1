import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// The delivery ledger's claims and outcomes. Work is claimed through
/// PostgreSQL (`FOR UPDATE SKIP LOCKED`), never through process memory, so
/// any number of runs may overlap without sending a delivery twice.
public struct DeliveryLedger: Sendable {
    public let client: Database
    public let logger: Logger

    public init(client: Database, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Queued deliveries after `afterID`, read only (the dry run).
    public func peekQueued(campaign: Int64, afterID: Int64, limit: Int) async throws -> [ClaimedDelivery] {
        let rows = try await client.query(try SQLQueries.named("ledger/peek-queued").query([
            "campaign": .value(campaign), "after_id": .value(afterID), "limit": .value(limit),
        ]), logger: logger)
        return try await Self.claimed(rows)
    }

    /// Claims deliverable rows for `run` among the next `limit` rows of the
    /// campaign after `after` (in ledger order, whatever their status: a
    /// window the planner reads in index order, whatever the statistics say
    /// of statuses). They become `in_flight`, owned by `run` while its lease
    /// (`runs.lease_expires_at`, renewed by the run and by each of its
    /// claims) holds, and no other run takes them before. Queued rows whose
    /// `not_before` has come, and in-flight rows of a run that is no longer
    /// running or whose lease lapsed, are claimable. Rows whose device was
    /// invalidated or deleted, or whose user opted out, since the snapshot
    /// are skipped. Nothing is claimed unless the campaign is running (a
    /// pause or cancel wins).
    ///
    /// A run passes the end of its previous window as `after`, so each claim
    /// reads only rows it has not passed yet; rows given back behind it are
    /// found with `firstClaimable`.
    private func claimWindow(campaign: Int64, run: Int64, limit: Int, lease: Duration,
                            after: Int64, excludingApps apps: [String], personal: [Template.Variable],
                            token: ClaimToken) async throws -> ClaimWindow {
        let seconds = Double(lease.components.seconds)
        let reads = Self.claimColumns(personal, campaign: campaign)
        let activity = token.sql
        let ended = activity.missing ?? "false"
        let rows = try await client.query(try SQLQueries.named("ledger/claim-window").query([
            "seconds": .value(seconds), "campaign": .value(campaign), "run": .value(run), "after": .value(after),
            "limit": .value(limit), "missing_reason": .value(token.missingReason),
        ], fragments: [
            "claimable_window": Self.claimable("w"), "claimable": Self.claimable("d"),
            "not_of_apps": Self.notOfApps("d", apps), "ended": ended,
            "token_join": activity.join, "token_column": activity.column,
            "personal_joins": reads.joins, "personal_returning": reads.returning, "personal_selected": reads.selected,
        ]), logger: logger)
        var window = ClaimWindow(deliveries: [], end: after, full: false)
        // Column by column (`RowCells`): a claim's rows are the run's most decoded.
        for try await row in rows {
            var cells = RowCells(row)
            let last = try cells.next(Int64?.self), n = try cells.next(Int64.self), runLive = try cells.next(Bool.self)
            let campaignLive = try cells.next(Bool.self)
            let id = try cells.next(Int64?.self), deviceID = try cells.next(Int64?.self)
            let token = try cells.next(String?.self), env = try cells.next(APNsEnvironment?.self), locale = try cells.next(String?.self)
            let key = try cells.next(String?.self), kid = try cells.next(String?.self), apnsID = try cells.next(UUID?.self)
            let variant = try cells.next(String?.self), attempts = try cells.next(Int32?.self), app = try cells.next(String?.self)
            let activityToken = try cells.next(String?.self)
            let values = try Self.claimedValues(&cells, personal: personal)
            window.end = last ?? after
            window.full = n >= limit
            window.read = Int(n)
            window.runLive = runLive
            window.campaignLive = campaignLive
            guard let id, let deviceID, let token, let env, let locale else { continue }
            var target = DeliveryTarget(deliveryID: id, deviceToken: token, environment: env, locale: locale,
                                        publicKey: key, keyID: kid, apnsID: apnsID ?? UUID(), variant: variant,
                                        app: app ?? AppRecord.defaultName, personal: values)
            target.activityToken = activityToken
            window.deliveries.append(ClaimedDelivery(target: target, deviceID: deviceID, attempts: Int(attempts ?? 0)))
        }
        return window
    }

    /// The values of `personal` a claim read for its row (`claimColumns`): the user's zone,
    /// then one per variable; nil when it read none.
    static func claimedValues(_ cells: inout RowCells, personal: [Template.Variable]) throws -> PersonalValues? {
        guard !personal.isEmpty else { return nil }
        let zone = try cells.next(String?.self)
        var read: [String?] = []
        read.reserveCapacity(personal.count)
        for _ in personal { read.append(try cells.next(String?.self)) }
        return PersonalValues(values: read, timeZone: zone)
    }

    /// Whether the campaign of ledger row `alias` was cancelled (a row given
    /// back is then cancelled, not queued).
    static func campaignCancelled(_ alias: String) -> String {
        "(SELECT c.status FROM campaigns c WHERE c.id = \(alias).campaign_id) = 'cancelled'"
    }

    /// The columns of ledger row `alias` given back unsent by a run that
    /// stopped or is gone: queued again as it was, or cancelled with its campaign.
    static func givenBack(_ alias: String) -> String {
        """
        status = CASE WHEN \(campaignCancelled(alias)) THEN 'cancelled' ELSE 'queued' END,
        last_error = CASE WHEN \(campaignCancelled(alias)) THEN 'campaign cancelled' ELSE \(alias).last_error END,
        claimed_by = NULL, lease_expires_at = NULL, updated_at = now()
        """
    }

    /// When the ledger row `alias` may be claimed (by campaign claims and
    /// config refresh claims alike): queued and due, or in flight for a run
    /// that is no longer running or whose lease lapsed.
    static func claimable(_ alias: String) -> String {
        """
        ((\(alias).status = 'queued' AND \(alias).not_before <= now())
         OR (\(alias).status = 'in_flight' AND NOT EXISTS (
                 SELECT 1 FROM runs r WHERE r.id = \(alias).claimed_by AND r.status = 'running'
                                        AND r.lease_expires_at >= now())))
        """
    }

    /// The first claimable row of the campaign after `after` (queued and
    /// due, or held by a run that is gone), one read of the campaign's rows;
    /// nil when there is none.
    private func firstClaimable(campaign: Int64, after: Int64 = 0, excludingApps apps: [String]) async throws -> Int64? {
        let rows = try await client.query(try SQLQueries.named("ledger/first-claimable").query(
            ["campaign": .value(campaign), "after": .value(after)],
            fragments: ["claimable": Self.claimable("d"), "not_of_apps": Self.notOfApps("d", apps)]), logger: logger)
        for try await id in rows.decode(Int64?.self) { return id }
        return nil
    }

    /// Claims the campaign's next claimable rows for `run` (at most `limit`),
    /// reading on after `after`, the end of the previous claim (0: from the
    /// campaign's first claimable row): windows of rows sent already
    /// (another worker's) are read past, and rows given back behind the
    /// cursor (a retry, a stopped run's) are found again. The one claim walk
    /// of a run's sending session.
    /// Rows of devices of `excludingApps` (apps whose credential APNs
    /// refused in this run) are left where they are.
    ///
    /// `personal`: the variables of the campaign's templates, read by the
    /// claim itself for each claimed row (`ClaimedDelivery.target.personal`;
    /// `Self.claimReads(_:)` says which the claim can read).
    public func claimNext(campaign: Int64, run: Int64, limit: Int, lease: Duration, after: Int64,
                          excludingApps apps: [String] = [], personal: [Template.Variable] = [],
                          token: ClaimToken = .device) async throws -> ClaimAnswer {
        var read = 0
        func take(_ from: Int64) async throws -> ClaimWindow {
            let window = try await claimWindow(campaign: campaign, run: run, limit: limit, lease: lease, after: from,
                                               excludingApps: apps, personal: personal, token: token)
            read += window.read
            return window
        }
        var window = ClaimWindow(deliveries: [], end: after, full: false)
        func goOn() -> Bool { window.deliveries.isEmpty && window.full && window.runLive && window.campaignLive }
        if after > 0 {
            window = try await take(after)
        } else if let start = try await firstClaimable(campaign: campaign, excludingApps: apps) {
            window = try await take(start - 1)
        }
        while goOn() { window = try await take(window.end) }
        if window.deliveries.isEmpty, window.runLive, window.campaignLive, after > 0,
           let behind = try await firstClaimable(campaign: campaign, excludingApps: apps) {
            window = try await take(behind - 1)
            while goOn() { window = try await take(window.end) }
        }
        if !window.runLive { return ClaimAnswer(deliveries: [], end: window.end, status: nil, runGone: true, read: read) }
        // Nothing claimable: a marketer's pause or cancel, or the end.
        let status = window.deliveries.isEmpty ? try await CampaignStore(client: client, logger: logger).sendingStatus(campaign) : nil
        return ClaimAnswer(deliveries: window.deliveries, end: window.end, status: status, runGone: false, read: read)
    }

    /// Claims up to `limit` of the campaign's claimable rows for `run`, from the first on.
    public func claim(campaign: Int64, run: Int64, limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        try await claimNext(campaign: campaign, run: run, limit: limit, lease: lease, after: 0).deliveries
    }

    /// How long until the campaign's next queued delivery may be sent, when
    /// one is queued at all (a backoff, quiet hours). A sale's step whose
    /// earlier step is still in flight is looked at again after `stepPoll`;
    /// one a later step superseded has nothing left to send (`herald_step_state`).
    public func nextDue(campaign: Int64, excludingApps apps: [String] = []) async throws -> Duration? {
        let poll = Self.stepPoll.inSeconds
        let rows = try await client.query(try SQLQueries.named("ledger/next-due").query(
            ["campaign": .value(campaign), "poll": .value(poll)],
            fragments: ["not_of_apps": Self.notOfApps("d", apps)]), logger: logger)
        for try await seconds in rows.decode(Double?.self) { return seconds.map { .milliseconds(Int64($0 * 1000)) } }
        return nil
    }

    /// How often a sale's step waiting for an earlier one is looked at again. It only decides
    /// when to look: the order is the claim's (`herald_step_state`), whatever the time.
    public static let stepPoll = Duration.milliseconds(250)

    /// The campaign's queued deliveries by their device's app.
    public func queuedByApp(campaign: Int64) async throws -> [String: Int] {
        var out: [String: Int] = [:]
        for try await (app, n) in try await client.query("""
            SELECT dv.app, count(*)::bigint FROM delivery_status d JOIN devices dv ON dv.id = d.device_id
            WHERE d.campaign_id = \(campaign) AND d.kind = 'campaign' AND d.status = 'queued'
            GROUP BY dv.app
            """, logger: logger).decode((String, Int64).self) {
            out[app] = Int(n)
        }
        return out
    }

    /// SQL: ledger row `alias` is not of a device of `apps` (true when none
    /// is named). App names are checked by the table (a-z, 0-9, - and _),
    /// so they are written as literals.
    static func notOfApps(_ alias: String, _ apps: [String]) -> String {
        let names = apps.filter { $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" } }
        guard !names.isEmpty else { return "true" }
        let list = names.map { "'\($0)'" }.joined(separator: ", ")
        return "NOT EXISTS (SELECT 1 FROM devices x WHERE x.id = \(alias).device_id AND x.app IN (\(list)))"
    }

    private static func claimed(_ rows: PostgresRowSequence) async throws -> [ClaimedDelivery] {
        var out: [ClaimedDelivery] = []
        for try await (id, deviceID, token, env, locale, key, kid, apnsID, variant, app) in rows.decode(
            (Int64, Int64, String, APNsEnvironment, String, String?, String?, UUID?, String?, String).self) {
            out.append(ClaimedDelivery(
                target: DeliveryTarget(deliveryID: id, deviceToken: token, environment: env, locale: locale,
                                       publicKey: key, keyID: kid, apnsID: apnsID ?? UUID(), variant: variant, app: app),
                deviceID: deviceID))
        }
        return out
    }

    /// Writes a batch of `run`'s outcomes with one statement, and
    /// invalidates the devices APNs said are gone with another. Fenced: an
    /// outcome is written only while `run` still holds the delivery (its
    /// lease was not taken over). A delivery given back (`queued`, `retry`)
    /// of a campaign cancelled meanwhile is cancelled. Returns how many
    /// outcomes were written.
    ///
    /// The outcomes are of deliveries of `campaign` (nil: config refresh
    /// pushes), which lets the statement read that campaign's partition of
    /// `deliveries` only; an outcome of another campaign is not
    /// written.
    @discardableResult
    public func record(_ outcomes: [DeliveryOutcome], run: Int64, campaign: Int64?) async throws -> Int {
        guard let campaign else {
            return try await write(outcomes, campaigns: [], run: run, partitions: "d.campaign_id IS NULL")[nil] ?? 0
        }
        return try await record(byCampaign: [campaign: outcomes], run: run)[campaign] ?? 0
    }

    /// Writes the outcomes of several campaigns' deliveries with one
    /// statement (the run's sessions that send at once share their writes:
    /// one commit instead of one a campaign), as `record` writes one
    /// campaign's; each row is looked up in its campaign's partition only.
    /// Returns how many outcomes of each campaign were written.
    @discardableResult
    public func record(byCampaign: [Int64: [DeliveryOutcome]], run: Int64) async throws -> [Int64: Int] {
        let groups = byCampaign.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
        guard !groups.isEmpty else { return [:] }
        let outcomes = groups.flatMap(\.value)
        let campaigns = groups.flatMap { group in Array(repeating: group.key, count: group.value.count) }
        // Campaign ids are numbers: written as literals, the statement is
        // planned for their partitions alone, and each row's lookup is pruned
        // to its own at run time.
        let list = groups.map { String($0.key) }.joined(separator: ", ")
        let written = try await write(outcomes, campaigns: campaigns, run: run,
                                      partitions: "d.campaign_id IN (\(list)) AND d.campaign_id = o.campaign")
        var out: [Int64: Int] = [:]
        for (campaign, _) in groups { out[campaign] = written[campaign] ?? 0 }
        return out
    }

    /// The outcome write of `record`: `partitions` names the partitions the
    /// rows are in, `campaigns` each outcome's campaign (empty: config refresh pushes).
    private func write(_ outcomes: [DeliveryOutcome], campaigns: [Int64], run: Int64,
                       partitions: String) async throws -> [Int64?: Int] {
        guard !outcomes.isEmpty else { return [:] }
        let ids = outcomes.map(\.deliveryID)
        let statuses = outcomes.map(\.status.rawValue)
        let errors = outcomes.map { $0.error ?? "" }
        let attempts = outcomes.map { Int32(clamping: $0.attempts) }
        let delays = outcomes.map(\.delay)
        let owners = campaigns.isEmpty ? Array(repeating: Int64(0), count: outcomes.count) : campaigns
        let rows = try await client.query(try SQLQueries.named("ledger/record-outcomes").query([
            "campaigns": .value(owners), "ids": .value(ids), "statuses": .value(statuses), "errors": .value(errors),
            "attempts": .value(attempts), "delays": .value(delays), "run": .value(run),
        ], fragments: ["partitions": partitions, "cancelled": Self.campaignCancelled("d")]), logger: logger)
        var written: [Int64?: Int] = [:]
        for try await (campaign, n) in rows.decode((Int64?, Int64).self) { written[campaign] = Int(n) }
        let total = written.values.reduce(0, +)
        if total < outcomes.count {
            logger.warning("outcomes of deliveries this run no longer holds were not written", metadata: [
                "run": "\(run)", "outcomes": "\(outcomes.count)", "written": "\(total)",
            ])
        }
        let invalid = outcomes.filter { $0.status == .invalid }
        if !invalid.isEmpty {
            let devices = invalid.map(\.deviceID)
            let reasons = invalid.map { $0.error ?? "invalid" }
            let since = invalid.map { ($0.invalidSince ?? Date()).timeIntervalSince1970 }
            try await client.query(try SQLQueries.named("ledger/invalidate-devices").query([
                "devices": .value(devices), "reasons": .value(reasons), "since": .value(since),
            ]), logger: logger)
        }
        return written
    }
}
