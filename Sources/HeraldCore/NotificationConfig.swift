import ExtensionKit
import Foundation

/// Contract 5: the categories and actions the app registers, as the JSON
/// document `GET /v1/notification-config` serves. Keys are written sorted, so
/// the same rows always give the same bytes (and the same ETag).
public enum NotificationConfig {
    public struct Action: Sendable, Hashable {
        public var id: String
        public var title: String
        public var options: Int
        public var textButtonTitle: String?
        public var textPlaceholder: String?

        public init(id: String, title: String, options: Int, textButtonTitle: String? = nil, textPlaceholder: String? = nil) {
            self.id = id
            self.title = title
            self.options = options
            self.textButtonTitle = textButtonTitle
            self.textPlaceholder = textPlaceholder
        }
    }

    public struct Category: Sendable, Hashable {
        public var id: String
        public var actions: [String]
        public var options: Int

        public init(id: String, actions: [String], options: Int) {
            self.id = id
            self.actions = actions
            self.options = options
        }
    }

    public static func render(categories: [Category], actions: [Action]) -> [UInt8] {
        var w = JSONWriter(capacity: 1024)
        w.raw("{\"NotificationConfig\":{\"UNNotificationAction\":{")
        for (i, a) in actions.sorted(by: { $0.id < $1.id }).enumerated() {
            if i > 0 { w.raw(",") }
            w.key(a.id)
            w.raw("{\"identifier\":")
            w.string(a.id)
            w.raw(",\"options\":")
            w.int(Int64(a.options))
            if let button = a.textButtonTitle {
                w.raw(",\"textInput\":{\"buttonTitle\":")
                w.string(button)
                w.raw(",\"placeholder\":")
                w.string(a.textPlaceholder ?? "")
                w.raw("}")
            }
            w.raw(",\"title\":")
            w.string(a.title)
            w.raw("}")
        }
        w.raw("},\"UNNotificationCategory\":{")
        for (i, c) in categories.sorted(by: { $0.id < $1.id }).enumerated() {
            if i > 0 { w.raw(",") }
            w.key(c.id)
            w.raw("{\"actions\":[")
            for (j, a) in c.actions.enumerated() {
                if j > 0 { w.raw(",") }
                w.string(a)
            }
            w.raw("],\"identifier\":")
            w.string(c.id)
            w.raw(",\"options\":")
            w.int(Int64(c.options))
            w.raw("}")
        }
        w.raw("}}}")
        return w.bytes
    }
}
