import Foundation

/// Herald's config refresh push (DESIGN, contract 7): a background push
/// (`content-available: 1`, no alert) that tells the app a campaign is about
/// to use a category whose current definition the app has not registered.
///
/// In `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`:
///
/// ```swift
/// if let refresh = HeraldConfigRefresh(userInfo: userInfo),
///    refresh.isNewer(than: store.registeredConfigETag) {
///     let request = AppRequestBuilder(baseURL: herald)
///         .notificationConfig(locale: Locale.preferredLanguages.first, registeredETag: store.registeredConfigETag)
///     // GET it; on 200 register its categories with UNUserNotificationCenter
///     // (NotificationConfigDocument), keep the ETag and report it on the next
///     // PUT /v1/devices/{token} as "config_etag".
/// }
/// ```
public struct HeraldConfigRefresh: Sendable, Hashable {
    /// The ETag of the config the app should have (`herald.config`), as the
    /// `ETag` header of `GET /v1/notification-config` gives it.
    public var etag: String

    /// A refresh announcing the config whose ETag is `etag`.
    public init(etag: String) {
        self.etag = etag
    }

    /// Reads the raw APNs payload as JSON bytes.
    ///
    /// A config refresh has `aps.content-available` 1, no `aps.alert`, and a
    /// non-empty `herald.config`.
    ///
    /// - Returns: `nil` when the payload is not a Herald config refresh (an
    ///   ordinary campaign notification, another provider's push).
    public init?(json: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any] else { return nil }
        self.init(object: object)
    }

    /// Reads the `userInfo` of a remote notification, as
    /// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)` gives it.
    ///
    /// - Returns: `nil` when the push is not a Herald config refresh.
    public init?(userInfo: [AnyHashable: Any]) {
        var object: [String: Any] = [:]
        for (key, value) in userInfo {
            guard let key = key as? String else { continue }
            object[key] = value
        }
        self.init(object: object)
    }

    private init?(object: [String: Any]) {
        guard let aps = object["aps"] as? [String: Any],
              (aps["content-available"] as? NSNumber)?.intValue == 1,
              aps["alert"] == nil,
              let herald = object["herald"] as? [String: Any],
              let etag = herald["config"] as? String, !etag.isEmpty
        else { return nil }
        self.etag = etag
    }

    /// Whether the app must fetch the config: it has registered none, or another one.
    public func isNewer(than registeredETag: String?) -> Bool {
        guard let registeredETag else { return true }
        return Self.strip(registeredETag) != Self.strip(etag)
    }

    private static func strip(_ tag: String) -> String {
        var t = Substring(tag.trimmingCharacters(in: .whitespaces))
        if t.hasPrefix("W/") { t = t.dropFirst(2) }
        return t.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
}
