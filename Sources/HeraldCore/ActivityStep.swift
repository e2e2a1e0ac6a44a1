import Foundation

/// One step of a sale: what every device's activity shows from `at` on.
public struct ActivityStep: Sendable, Hashable {
    public var number: Int
    public var event: ActivityEvent
    /// When the step falls due (its `timestamp` is the send's time within its window, `timestamp(_:now:)`).
    public var at: Date
    public var state: [LiveActivitySale.Field: JSONValue]
    /// Only updates have their own alert; the start's is the campaign's content.
    public var alert: [String: LocalizedText]?
}
