import NIOCore
import NIOHPACK

/// The headers of one APNs request, as the client builds them (encoded by `RequestHeaderEncoder`).
/// A class: the request is handed along several times on its way to the connection, and one
/// reference moves cheaper than eight strings.
final class APNsRequestHead: Sendable {
    let authority: String
    let deviceToken: String
    /// nil on connections authenticated by a client certificate.
    let authorization: String?
    let topic: String
    let pushType: String
    let priority: Int
    let expiration: Int?
    let collapseID: String?
    let apnsID: String
    let contentLength: Int

    init(
        authority: String,
        deviceToken: String,
        authorization: String?,
        topic: String,
        pushType: String,
        priority: Int,
        expiration: Int?,
        collapseID: String?,
        apnsID: String,
        contentLength: Int
    ) {
        self.authority = authority
        self.deviceToken = deviceToken
        self.authorization = authorization
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.contentLength = contentLength
    }
}
