import Foundation

/// Builds `POST /v1/receipts` requests (DESIGN contract 8).
///
/// In the Notification Service Extension, post the receipt as soon as the
/// notification arrives, beside the media download, and call the content
/// handler when both are done: iOS gives the extension about 30 seconds and
/// 24 MB, and may end it once the handler is called, taking an unfinished
/// request with it. A receipt is one request of about 150 bytes; give it a
/// short timeout (5 s) and do not retry beyond the extension's time: a lost
/// receipt only makes the delivery count as unconfirmed.
public struct ReceiptRequestBuilder: Sendable {
    /// `<baseURL>/v1/receipts`.
    public let endpoint: URL

    public init(baseURL: URL) {
        endpoint = baseURL.appending(path: "v1/receipts")
    }

    /// The receipt of `notification`, arrived at `arrivedAt`.
    public func receipt(for notification: HeraldNotification, arrivedAt: Date = Date(), sealedOpened: Bool? = nil,
                        mediaAttached: Bool? = nil) throws(ReplyRequestError) -> Receipt {
        guard let token = notification.replyToken else { throw .noReplyToken }
        return Receipt(delivery: notification.delivery, token: token, arrivedAt: arrivedAt,
                       sealedOpened: sealedOpened, mediaAttached: mediaAttached)
    }

    /// One request for 1 to ``Receipt/maxPerRequest`` receipts (the first that many).
    public func request(_ receipts: [Receipt]) throws(ReplyRequestError) -> ReplyHTTPRequest {
        ReplyHTTPRequest(url: endpoint, method: "POST", headers: [("Content-Type", "application/json")],
                         body: try Receipt.body(Array(receipts.prefix(Receipt.maxPerRequest))))
    }
}
