import NIOCore
import NIOHPACK

/// What goes into a request's header block.
enum RequestHead: Sendable {
    /// A notification: encoded with a cached constant part.
    case apns(APNsRequestHead)
    /// Headers exactly as given (testing): every field a literal without indexing.
    case raw(HPACKHeaders)
}
