import Foundation

/// The categories and actions of `GET /v1/notification-config` (contract 5),
/// in the locale the app asked for: what the app registers with
/// `UNUserNotificationCenter.setNotificationCategories` (one
/// `UNNotificationCategory` per entry, one `UNNotificationAction` or
/// `UNTextInputNotificationAction` per action).
public struct NotificationConfigDocument: Sendable, Hashable {
    /// One entry of `UNNotificationAction`: a button, or a text input when
    /// ``textButtonTitle`` is set.
    public struct Action: Sendable, Hashable {
        /// The action identifier iOS reports when the user taps it, and the
        /// `action` of the reply (``ReplyRequestBuilder``).
        public var identifier: String
        /// The button's title in the locale asked for.
        public var title: String
        /// UNNotificationActionOptions bits: 1 authenticationRequired, 2 destructive, 4 foreground.
        public var options: Int
        /// For a text-input action (`UNTextInputNotificationAction`): its button title and placeholder.
        public var textButtonTitle: String?
        /// For a text-input action: the placeholder of its text field.
        public var textPlaceholder: String?
    }

    /// One entry of `UNNotificationCategory`: the actions a campaign of this
    /// category shows.
    public struct Category: Sendable, Hashable {
        /// The category identifier a notification names in `aps.category`
        /// (``HeraldNotification/category``).
        public var identifier: String
        /// Action identifiers in display order.
        public var actions: [String]
        /// UNNotificationCategoryOptions bits: 1 customDismissAction.
        public var options: Int
    }

    /// The categories by identifier.
    public var categories: [String: Category]
    /// The actions by identifier; a category names its actions by these keys.
    public var actions: [String: Action]
    /// The response's `ETag`, to report as `config_etag` once registered.
    public var etag: String?

    /// Why a response body is not a notification config document.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong with the document.
        public let description: String
    }

    /// Reads the body of a 200 answer to ``AppRequestBuilder/notificationConfig(locale:registeredETag:)``.
    ///
    /// - Parameters:
    ///   - json: The response body.
    ///   - etag: The response's `ETag` header, kept as ``etag``.
    /// - Throws: ``ParseError`` when the body is not a `NotificationConfig`
    ///   document or an action has no title.
    public init(json: Data, etag: String?) throws(ParseError) {
        guard let root = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any],
              let config = root["NotificationConfig"] as? [String: Any],
              let cats = config["UNNotificationCategory"] as? [String: [String: Any]],
              let acts = config["UNNotificationAction"] as? [String: [String: Any]]
        else { throw ParseError(description: "not a NotificationConfig document") }
        var actions: [String: Action] = [:]
        for (id, a) in acts {
            guard let title = a["title"] as? String else { throw ParseError(description: "action \(id) has no title") }
            let input = a["textInput"] as? [String: Any]
            actions[id] = Action(identifier: id, title: title, options: (a["options"] as? NSNumber)?.intValue ?? 0,
                                 textButtonTitle: input?["buttonTitle"] as? String,
                                 textPlaceholder: input?["placeholder"] as? String)
        }
        var categories: [String: Category] = [:]
        for (id, c) in cats {
            categories[id] = Category(identifier: id, actions: c["actions"] as? [String] ?? [],
                                      options: (c["options"] as? NSNumber)?.intValue ?? 0)
        }
        self.categories = categories
        self.actions = actions
        self.etag = etag
    }
}
