import Foundation

/// Action identifiers iOS itself reports (UserNotifications), valid for every
/// campaign besides its category's own actions.
public enum ReplyAction {
    /// The user opened the notification (`UNNotificationDefaultActionIdentifier`).
    public static let defaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"
    /// The user dismissed the notification (`UNNotificationDismissActionIdentifier`);
    /// iOS reports it only for categories with the `customDismissAction` option.
    public static let dismissActionIdentifier = "com.apple.UNNotificationDismissActionIdentifier"
}
