import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A sale's broadcast channels (`activity_channels`, `channel_pushes`; DESIGN, contract 10): the channels it made, and each
/// step's pushes to them, claimed under the run's lease as deliveries are.
extension LiveActivityStore {
    /// The sale's channels not yet deleted.
    public func channels(sale: Int64) async throws -> [ChannelKey: String] {
        var found: [ChannelKey: String] = [:]
        for try await (app, environment, channel) in try await client.query("""
            SELECT app, environment, channel_id FROM activity_channels WHERE campaign_id = \(sale) AND deleted_at IS NULL
            """, logger: logger).decode((String, String, String).self) {
            found[ChannelKey(app: app, environment: APNsEnvironment(rawValue: environment) ?? .production)] = channel
        }
        return found
    }

    /// The apps and environments of the devices with a push-to-start token in `apps` (nil: any
    /// app): each needs a channel of the sale.
    public func channelsNeeded(apps: [String]?) async throws -> [ChannelKey] {
        var keys: [ChannelKey] = []
        for try await (app, environment) in try await client.query(
            try SQLQueries.named("live-activities/channels-needed").query(["apps": .value(apps)]), logger: logger
        ).decode((String, String).self) {
            if let environment = APNsEnvironment(rawValue: environment) { keys.append(ChannelKey(app: app, environment: environment)) }
        }
        return keys.sorted()
    }

    /// Devices of `apps` (nil: any app), not invalidated, with a push-to-start token.
    public func pushToStartDevices(apps: [String]?) async throws -> Int {
        for try await n in try await client.query(
            try SQLQueries.named("live-activities/push-to-start-devices").query(["apps": .value(apps)]), logger: logger
        ).decode(Int64.self) {
            return Int(n)
        }
        return 0
    }

    /// Records a channel made for the sale. False: another run recorded one for that app and
    /// environment first (the caller deletes its own, and uses the one recorded).
    public func recordChannel(sale: Int64, key: ChannelKey, channel: String) async throws -> Bool {
        let query = try SQLQueries.named("live-activities/record-channel").query([
            "sale": .value(sale), "app": .value(key.app), "environment": .value(key.environment.rawValue), "channel": .value(channel),
        ])
        for try await _ in try await client.query(query, logger: logger) { return true }
        return false
    }

    /// Claims the step's channel pushes that are due: queued ones whose retry time has come, and
    /// those in flight under a run whose lease lapsed (a killed run's). A claim a step's next
    /// step has superseded is expired instead: nothing older goes after something newer.
    public func claimChannelPushes(step: Int64, run: Int64) async throws -> [ChannelPush] {
        try await client.withTransaction(logger: logger) { conn in
            // A step whose earlier step is in flight, or that a later one superseded, claims
            // nothing (`herald_step_state`); the sale's lock is held until this transaction ends.
            var state = "clear"
            for try await s in try await conn.query("SELECT herald_step_state(\(step))", logger: logger).decode(String.self) {
                state = s
            }
            guard state == "clear" else { return [] }
            try await conn.query(
                try SQLQueries.named("live-activities/expire-superseded-channel-pushes").query(["step": .value(step)]), logger: logger
            )
            var claimed: [ChannelPush] = []
            let claim = try SQLQueries.named("live-activities/claim-channel-pushes").query(["step": .value(step), "run": .value(run)])
            for try await (app, environment, channel, attempts) in try await conn.query(claim, logger: logger)
                .decode((String, String, String, Int32).self) {
                let key = ChannelKey(app: app, environment: APNsEnvironment(rawValue: environment) ?? .production)
                claimed.append(ChannelPush(key: key, channel: channel, attempts: Int(attempts)))
            }
            return claimed.sorted { $0.key < $1.key }
        }
    }

    /// Records what became of a step's push to a channel this run holds.
    public func recordChannelPush(step: Int64, key: ChannelKey, run: Int64, outcome: ChannelPushOutcome) async throws {
        // The push this run holds: the step's, to the channel of that app and environment.
        let held: [String: NamedQuery.Bind] = [
            "step": .value(step), "app": .value(key.app), "environment": .value(key.environment.rawValue), "run": .value(run),
        ]
        let query: PostgresQuery
        switch outcome {
        case .sent(let requestID):
            query = try SQLQueries.named("live-activities/channel-push-sent").query(held.merging(["request_id": .value(requestID)]) { $1 })
        case .retry(let after, let error):
            let seconds = Double(after.components.seconds) + Double(after.components.attoseconds) / 1e18
            query = try SQLQueries.named("live-activities/channel-push-retry")
                .query(held.merging(["seconds": .value(seconds), "error": .value(error)]) { $1 })
        case .failed(let reason):
            query = try SQLQueries.named("live-activities/channel-push-failed").query(held.merging(["reason": .value(reason)]) { $1 })
        }
        try await client.query(query, logger: logger)
    }

    /// When the step's next channel push is due (nil: none is left to send, or a later step
    /// superseded this one); a step waiting for an earlier one is looked at again after
    /// `DeliveryLedger.stepPoll`.
    public func nextChannelPush(step: Int64) async throws -> Date? {
        let poll = DeliveryLedger.stepPoll.inSeconds
        for try await next in try await client.query(
            try SQLQueries.named("live-activities/next-channel-push").query(["step": .value(step), "poll": .value(poll)]),
            logger: logger
        ).decode(Date?.self) {
            return next
        }
        return nil
    }

    /// Channels of sales whose dismissal date has passed (or that were cancelled), not yet deleted.
    public func channelsToDelete() async throws -> [ChannelToDelete] {
        var found: [ChannelToDelete] = []
        for try await (sale, app, environment, channel) in try await client.query(
            try SQLQueries.named("live-activities/channels-to-delete").query([:]), logger: logger
        ).decode((Int64, String, String, String).self) {
            let key = ChannelKey(app: app, environment: APNsEnvironment(rawValue: environment) ?? .production)
            found.append(ChannelToDelete(sale: sale, key: key, channel: channel))
        }
        return found
    }

    public func markChannelDeleted(_ channel: ChannelToDelete) async throws {
        try await client.query("""
            UPDATE activity_channels SET deleted_at = now()
            WHERE campaign_id = \(channel.sale) AND app = \(channel.key.app) AND environment = \(channel.key.environment.rawValue)
            """, logger: logger)
    }
}
