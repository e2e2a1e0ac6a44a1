import Foundation
import HeraldCore

/// Broadcast pushes and the channel management API (DESIGN, contract 10): the checks APNs makes
/// of each, after the connection's own authorization.
extension SimulatorConnectionHandler {
    /// `POST /4/broadcasts/apps/<bundle>`: one Live Activity update or end for every activity
    /// subscribed to the channel `apns-channel-id` names.
    func judgeBroadcast(_ request: inout ParsedRequest, bundle: String, body: [UInt8]) -> Verdict {
        if let id = request.requestID ?? request.apnsID, !HeaderRules.isUUID(id) { return .reject(400, "BadMessageId") }
        if request.duplicate { return .reject(400, "DuplicateHeaders") }
        if bundle.isEmpty || bundle.contains("/") { return .reject(404, "BadPath") }
        if PushTypeRules.split(topic: bundle).suffix != nil { return .reject(400, "TopicDisallowed") }
        if let refusal = authorize(&request, topic: bundle) { return refusal }
        guard let channelID = request.channelID else { return .reject(400, "MissingChannelId") }
        guard PushTypeRules.isChannelID(channelID) else { return .reject(400, "BadChannelId") }
        guard let channel = state.channels.channel(channelID, of: bundle) else { return .reject(400, "ChannelNotRegistered") }
        guard let pushType = request.pushType else { return .reject(400, "MissingPushType") }
        guard pushType.lowercased() == "liveactivity" else { return .reject(400, "InvalidPushType") }
        if let priority = request.priority, priority != "10", priority != "5", priority != "1" {
            return .reject(400, "BadPriority")
        }
        if let expiration = request.expiration {
            guard let seconds = Int64(expiration) else { return .reject(400, "BadExpirationDate") }
            // No Message Stored: a message is never kept, so it may not say how long to keep it.
            if channel.storagePolicy == 0, seconds != 0 { return .reject(400, "BadExpirationDate") }
        }
        if body.isEmpty { return .reject(400, "PayloadEmpty") }
        if body.count > PayloadBuilder.broadcastMaxBytes { return .reject(413, "PayloadTooLarge") }
        guard let aps = HeaderRules.aps(body) else { return .reject(400, "BadRequestPayload") }
        if let problem = PushTypeRules.liveActivityProblem(aps, broadcast: true) { return .badPayload(problem) }
        if state.channels.failingBroadcasts > 0 {
            state.channels.failingBroadcasts -= 1
            let status = state.channels.broadcastFault
            return .reject(status, status == 429 ? "TooManyRequests" : status == 500 ? "InternalServerError" : "ServiceUnavailable")
        }
        return faultOrAccept()
    }

    /// The channel management API: `/1/apps/<bundle>/channels` (POST creates, GET reads, DELETE
    /// deletes, with `apns-channel-id`) and `GET /1/apps/<bundle>/all-channels`.
    func judgeManagement(_ request: inout ParsedRequest, body: [UInt8]) -> Verdict {
        if let id = request.requestID, !HeaderRules.isUUID(id) {
            request.requestID = nil
            return .reject(400, "BadMessageId")
        }
        if request.duplicate { return .reject(400, "DuplicateHeaders") }
        guard let path = request.path, path.hasPrefix("/1/apps/") else { return .reject(404, "BadPath") }
        let parts = path.dropFirst("/1/apps/".count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1] == "channels" || parts[1] == "all-channels" else {
            return .reject(404, "BadPath")
        }
        let bundle = String(parts[0])
        if PushTypeRules.split(topic: bundle).suffix != nil { return .reject(400, "TopicDisallowed") }
        if let refusal = authorize(&request, topic: bundle) { return refusal }
        switch (request.method, parts[1]) {
        case ("POST"?, "channels"):
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                return .reject(400, "BadRequestPayload")
            }
            guard Set(object.keys) == ["message-storage-policy", "push-type"],
                let policy = object["message-storage-policy"] as? Int, policy == 0 || policy == 1,
                object["push-type"] as? String == "LiveActivity"
            else { return .reject(400, "BadRequestParams") }
            let bytes = (0..<max(1, state.configuration.channelIDBytes)).map { _ in UInt8.random(in: .min ... .max, using: &state.random) }
            let id = Data(bytes).base64EncodedString()
            guard state.channels.create(bundle: bundle, storagePolicy: policy, id: id, limit: state.configuration.channelsPerApp) else {
                return .reject(400, "CannotCreateChannelConfig")
            }
            state.stats.channelsCreated += 1
            return Verdict(status: 201, headers: [("apns-channel-id", id)])
        case ("GET"?, "all-channels"):
            let list = state.channels.all(of: bundle).map { "\"\($0)\"" }.joined(separator: ",")
            return Verdict(status: 200, headers: [("content-type", "application/json")], body: "{\"channels\":[\(list)]}")
        case ("GET"?, "channels"), ("DELETE"?, "channels"):
            guard let id = request.channelID else { return .reject(400, "MissingChannelId") }
            guard PushTypeRules.isChannelID(id) else { return .reject(400, "BadChannelId") }
            guard let channel = state.channels.channel(id, of: bundle) else { return .reject(400, "ChannelNotRegistered") }
            if request.method == "DELETE" {
                _ = state.channels.delete(id, of: bundle)
                state.stats.channelsDeleted += 1
                return Verdict(status: 204)
            }
            return Verdict(status: 200, headers: [("content-type", "application/json")],
                           body: "{\"message-storage-policy\":\(channel.storagePolicy),\"push-type\":\"LiveActivity\"}")
        default:
            return .reject(405, "MethodNotAllowed")
        }
    }
}
