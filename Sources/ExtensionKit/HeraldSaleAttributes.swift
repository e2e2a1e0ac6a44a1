import Foundation

/// The Live Activity of a Herald flash sale (DESIGN, contract 10), as plain Codable values that
/// build on every platform. In the app, declare the conformance ActivityKit needs:
///
/// ```swift
/// import ActivityKit
/// import ExtensionKit
/// extension HeraldSaleAttributes: ActivityAttributes {}
/// ```
///
/// The property names are the JSON keys Herald sends, and the times are integers, because
/// ActivityKit decodes `content-state` and `attributes` with no custom strategy.
public struct HeraldSaleAttributes: Codable, Hashable, Sendable {
    /// The sale's campaign id: the `{campaign}` of the activity's registration.
    public var campaign: Int64
    public var title: String
    /// The broadcast channel the activity listens on, when the sale runs on one (iOS 18): the
    /// app registers it (`AppRequestBuilder.ActivityUpdates.channel`), as it has no update token.
    public var channel: String?

    public struct ContentState: Codable, Hashable, Sendable {
        public var campaign: Int64
        /// 0 the start, then each update, the last the end: what the app confirms it shows.
        public var step: Int
        /// The sale's end, seconds since 1970 (``endDate``).
        public var endsAt: Int64
        public var headline: String
        public var price: String
        public var wasPrice: String?
        public var stockLeft: Int?

        public init(campaign: Int64, step: Int, endsAt: Int64, headline: String, price: String,
                    wasPrice: String? = nil, stockLeft: Int? = nil) {
            self.campaign = campaign
            self.step = step
            self.endsAt = endsAt
            self.headline = headline
            self.price = price
            self.wasPrice = wasPrice
            self.stockLeft = stockLeft
        }

        /// For a countdown: `Text(timerInterval: Date.now...state.endDate)`.
        public var endDate: Date { Date(timeIntervalSince1970: TimeInterval(endsAt)) }
    }

    public init(campaign: Int64, title: String, channel: String? = nil) {
        self.campaign = campaign
        self.title = title
        self.channel = channel
    }

    /// The attributes type Herald names in a push-to-start (`attributes-type`).
    public static let typeName = "HeraldSaleAttributes"
}
