import Foundation
import HeraldCore

/// What APNs checks of the push types beside alerts (DESIGN, contract 10): the topic suffix of
/// each, the `aps` keys a Live Activity event needs, broadcast's own rules. Pure values, so each
/// refusal is tested without a connection.
enum PushTypeRules {
    /// The push types whose topic is the bundle id with `.push-type.<type>` appended.
    static let suffixed: Set<String> = ["liveactivity", "widgets", "controls"]
    static let suffixMarker = ".push-type."

    /// The bundle id a topic belongs to, and the push type its suffix names (nil: none).
    static func split(topic: String) -> (bundle: String, suffix: String?) {
        guard let range = topic.range(of: suffixMarker, options: .backwards) else { return (topic, nil) }
        return (String(topic[..<range.lowerBound]), String(topic[range.upperBound...]))
    }

    /// Nil when the topic fits the push type: a suffixed type needs its own suffix, the others none.
    static func topicProblem(topic: String, pushType: String?) -> String? {
        let suffix = split(topic: topic).suffix
        let type = pushType ?? "alert"
        if suffixed.contains(type) { return suffix == type ? nil : "TopicDisallowed" }
        return suffix == nil ? nil : "TopicDisallowed"
    }

    /// Apple's reasons for a Live Activity payload sent to a device token: nil when valid.
    /// `detail` says what was wrong (for the simulator's counters; APNs' reason is `BadPayload`).
    static func liveActivityProblem(_ aps: [String: Any], broadcast: Bool) -> String? {
        guard let event = aps["event"] as? String else { return "needs \"event\"" }
        guard ["start", "update", "end"].contains(event) else { return "\"event\" must be start, update or end" }
        guard aps["timestamp"] is NSNumber else { return "needs \"timestamp\" (seconds)" }
        if event != "end", !(aps["content-state"] is [String: Any]) { return "needs \"content-state\" (an object)" }
        if event == "start" {
            if broadcast { return "a broadcast cannot start a Live Activity" }
            guard aps["alert"] is [String: Any] else { return "a start needs \"alert\"" }
            guard aps["attributes-type"] is String else { return "a start needs \"attributes-type\"" }
            guard aps["attributes"] is [String: Any] else { return "a start needs \"attributes\"" }
            if aps["input-push-token"] != nil, aps["input-push-channel"] != nil {
                return "a start takes input-push-token or input-push-channel, not both"
            }
        } else if aps["attributes-type"] != nil || aps["input-push-channel"] != nil || aps["input-push-token"] != nil {
            return "only a start takes attributes-type, input-push-token or input-push-channel"
        }
        for key in ["stale-date", "dismissal-date", "relevance-score"] where aps[key] != nil && !(aps[key] is NSNumber) {
            return "\"\(key)\" must be a number"
        }
        return nil
    }

    /// `{"aps":{"content-changed":true}}`, as widgets and controls pushes are.
    static func contentChangedProblem(_ aps: [String: Any]) -> String? {
        (aps["content-changed"] as? Bool) == true ? nil : "needs \"content-changed\": true"
    }

    /// A channel id as APNs makes them: base64, of no stated size.
    static func isChannelID(_ text: String) -> Bool { ChannelID.isUsable(text) }
}
