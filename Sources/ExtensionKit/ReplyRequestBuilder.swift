import Foundation

/// Builds `POST /v1/replies` requests for a notification (DESIGN contract 4).
public struct ReplyRequestBuilder: Sendable {
    /// `<baseURL>/v1/replies`.
    public let endpoint: URL

    /// `baseURL` is where Herald's reply intake is served, with or without a
    /// path prefix (`https://push.example.com` or `https://example.com/herald/`).
    public init(baseURL: URL) {
        endpoint = baseURL.appending(path: "v1/replies")
    }

    /// The body for the user's `action` (a category action identifier or one of
    /// ``ReplyAction``) and, for text-input actions, the typed `text`.
    public func body(
        for notification: HeraldNotification,
        action: String,
        text: String? = nil,
        occurredAt: Date,
        replyID: UUID
    ) throws(ReplyRequestError) -> ReplyBody {
        guard let token = notification.replyToken else { throw .noReplyToken }
        guard !action.isEmpty else { throw .emptyAction }
        return ReplyBody(
            delivery: notification.delivery,
            token: token,
            action: action,
            text: text,
            occurredAt: occurredAt,
            replyID: replyID
        )
    }

    /// The request for the user's `action`. Keep `replyID` to retry with the
    /// same id: the server stores a reply once.
    public func request(
        for notification: HeraldNotification,
        action: String,
        text: String? = nil,
        occurredAt: Date,
        replyID: UUID
    ) throws(ReplyRequestError) -> ReplyHTTPRequest {
        try request(for: body(for: notification, action: action, text: text, occurredAt: occurredAt, replyID: replyID))
    }

    /// The request carrying `body` (for a retry of a stored body).
    public func request(for body: ReplyBody) throws(ReplyRequestError) -> ReplyHTTPRequest {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(body)
        } catch {
            throw .encodingFailed
        }
        return ReplyHTTPRequest(
            url: endpoint,
            method: "POST",
            headers: [
                (name: "content-type", value: "application/json"),
                (name: "accept", value: "application/json"),
            ],
            body: data
        )
    }
}
