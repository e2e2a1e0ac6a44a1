/// A Live Activity sale's payloads, and which of its steps a campaign row sends.
public struct ActivityPlan: Sendable {
    public let payload: ActivityPayload
    /// 0: the sale's own row (its start, by push-to-start); n ≥ 1: the row of update or end n.
    public let step: Int
    /// What is left of the stock, read when the step was prepared (a sale with `"stock": true`).
    public var stockLeft: Int?
    /// The sale's broadcast channels (a sale with `"channel": true`): its start subscribes each
    /// device's activity to its app's and environment's channel, its updates and end go once
    /// to each channel.
    public var channels: [ChannelKey: String] = [:]

    public init(payload: ActivityPayload, step: Int, stockLeft: Int? = nil) {
        self.payload = payload
        self.step = step
        self.stockLeft = stockLeft
    }
}
