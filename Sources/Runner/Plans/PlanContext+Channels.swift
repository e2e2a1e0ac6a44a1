import APNs
import Foundation
import HeraldCore
import Logging
import Store

/// A sale's broadcast channels (DESIGN, contract 10, "Broadcast channels"): made before its
/// start, sent each update and the end once, deleted after its dismissal date.
extension PlanContext {
    /// The channels of sale `sale`, one per app and environment of its push-to-start devices,
    /// made now where missing. A channel APNs refuses to make fails the sale with its reason;
    /// nil when a transient answer (429, 5xx, no connection) outlasted the attempts of this run:
    /// the sale is left as it was, for the next run.
    func makeChannels(sale: Int64) async throws -> [ChannelKey: String]? {
        guard let channels else {
            throw CampaignProblem("live_activity.channel: this run has no broadcast channel client")
        }
        let (activities, campaigns) = (stores.liveActivities, stores.campaigns)
        var made = try await db("read the sale's channels") { try await activities.channels(sale: sale) }
        let apps = try await db("read the campaign's apps") { try await campaigns.apps(sale) }
        let needed = try await db("find the apps of push-to-start devices") { try await activities.channelsNeeded(apps: apps) }
        for key in needed where made[key] == nil && !options.apps.certificateApps.contains(key.app) {
            var attempt = 0
            while true {
                attempt += 1
                do {
                    let channel = try await channels.create(key)
                    // Recorded as APNs answered it before anything else can fail: a recorded
                    // channel is deleted once its sale ends or fails (`deleteEndedChannels`).
                    if try await record(channel, key: key, sale: sale) {
                        guard ChannelID.isUsable(channel) else {
                            throw CampaignProblem(
                                "live_activity.channel: APNs answered \(options.apps.describe(app: key.app, environment: key.environment)) with a broadcast channel id that is not base64 (\(ChannelID.excerpt(channel))), which no device can subscribe to; the sale fails before any device is started and the channel is deleted. Report it to Apple, then schedule the sale again",
                                personNeeded: true)
                        }
                        made[key] = channel
                        logger.notice("broadcast channel made", metadata: [
                            "app": "\(key.app)", "environment": "\(key.environment.rawValue)", "channel": "\(channel)",
                        ])
                    } else {
                        // Another run made one first: its channel is the sale's, this one goes.
                        try? await channels.delete(key, channel: channel)
                        made = try await db("read the sale's channels") { try await activities.channels(sale: sale) }
                    }
                    break
                } catch let failure as APNsChannelClient.Failure where failure.transient && attempt < Self.channelAttempts {
                    logger.warning("broadcast channel not made yet; trying again", metadata: [
                        "app": "\(key.app)", "attempt": "\(attempt)", "error": "\(failure)",
                    ])
                    try await options.clock.sleep(for: .seconds(DeliveryPolicy.backoff(status: failure.status, attempts: attempt)))
                } catch let failure as APNsChannelClient.Failure where failure.transient {
                    logger.error("broadcast channel not made; the sale waits for the next run", metadata: [
                        "app": "\(key.app)", "error": "\(failure)",
                    ])
                    return nil
                } catch let failure as APNsChannelClient.Failure {
                    throw CampaignProblem("live_activity.channel: \(options.apps.describe(app: key.app, environment: key.environment)) could not make the sale's broadcast channel: \(failure)",
                                          personNeeded: true)
                }
            }
        }
        return made
    }

    /// Records a channel APNs made (false: another run recorded one first). A refusal of the
    /// database's own (not a lost connection, which `db` retries) deletes the channel from APNs
    /// at once, since nothing else would, and fails the sale with words a person can act on.
    private func record(_ channel: String, key: ChannelKey, sale: Int64) async throws -> Bool {
        guard let channels else { return false }
        let activities = stores.liveActivities
        do {
            return try await db("record the sale's channel") { try await activities.recordChannel(sale: sale, key: key, channel: channel) }
        } catch where DatabaseFault(error).isCampaignsOwn {
            try? await channels.delete(key, channel: channel)
            throw CampaignProblem(
                "live_activity.channel: the broadcast channel APNs made for \(options.apps.describe(app: key.app, environment: key.environment)) could not be recorded (\(ChannelID.excerpt(channel)), \(channel.utf8.count) characters), so it was deleted again and the sale fails before any device is started; the database's migrations may be older than this herald (run herald migrate), then schedule the sale again",
                personNeeded: true)
        }
    }

    /// Attempts at making a channel within one run before the sale waits for the next.
    static var channelAttempts: Int { 4 }

    /// Sends step `step` of a sale once to each of its channels (the rows its snapshot wrote)
    /// through the sending engine, under the run's lease, breakers and limits: a transient
    /// answer is tried again (in this run while its wait is short, else by the next), a
    /// refusal is recorded with its reason.
    func broadcast(step: Int64, plan: ActivityPlan) async throws {
        guard let channels else { return }
        let source = ChannelPushClaims(activities: stores.liveActivities, db: db, step: step, sale: plan, runID: runID,
                                       apps: options.apps, logger: logger)
        let engine = SendingEngine(transport: ChannelPushTransport(channels: channels, pushes: source.pushes),
                                   options: options, leases: leases, logger: logger, budget: budget)
        var tally = SendTally()
        let finish = try await engine.send(source, breakers: breakers, tally: &tally)
        if finish != SendingFinish.done { logger.notice("the step's broadcasts wait", metadata: ["reason": "\(finish)"]) }
    }

    /// Deletes the channels of sales whose dismissal date has passed (or that were cancelled).
    /// A channel APNs no longer knows counts as deleted; a transient answer leaves it for the
    /// next run.
    func deleteEndedChannels() async throws {
        guard let channels else { return }
        let activities = stores.liveActivities
        let ended = try await db("find the channels of ended sales") { try await activities.channelsToDelete() }
        for channel in ended {
            var metadata: Logger.Metadata = ["campaign": "\(channel.sale)", "app": "\(channel.key.app)",
                                             "environment": "\(channel.key.environment.rawValue)"]
            do {
                try await channels.delete(channel.key, channel: channel.channel)
                logger.notice("broadcast channel deleted", metadata: metadata)
            } catch let failure where failure.transient {
                metadata["error"] = "\(failure)"
                logger.warning("broadcast channel not deleted yet; the next run tries again", metadata: metadata)
                continue
            } catch {
                // Gone already (ChannelNotRegistered) or refused for good: nothing further to do.
                metadata["error"] = "\(error)"
                logger.warning("broadcast channel not deleted", metadata: metadata)
            }
            try await db("record the deleted channel") { try await activities.markChannelDeleted(channel) }
        }
    }
}
