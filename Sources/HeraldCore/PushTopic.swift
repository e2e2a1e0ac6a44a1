import Foundation

/// The APNs topic of each push type beside the app's own (`<bundle>.push-type.<type>`).
public enum PushTopic {
    public static func liveActivity(_ bundle: String) -> String { bundle + ".push-type.liveactivity" }
    public static func widgets(_ bundle: String) -> String { bundle + ".push-type.widgets" }
    public static func controls(_ bundle: String) -> String { bundle + ".push-type.controls" }
}
