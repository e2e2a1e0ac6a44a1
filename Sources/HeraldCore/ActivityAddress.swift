import Foundation

/// How a step reaches a device.
public enum ActivityAddress: Sendable, Hashable {
    /// Push-to-start to the device's push-to-start token; the activity then registers its own
    /// update token (`input-push-token`).
    case startByToken
    /// Push-to-start whose activity subscribes to a broadcast channel (`input-push-channel`).
    case startOnChannel(String)
    /// An update or the end to one activity's update token, or to a channel.
    case activity
}
