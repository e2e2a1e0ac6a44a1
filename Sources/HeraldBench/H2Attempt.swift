import APNs
import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// What one attempt came to.
enum H2Attempt: Sendable {
    case response(status: Int, body: ByteBuffer?)
    /// REFUSED_STREAM, or above a GOAWAY's last stream id: safe to send again.
    case notProcessed
    case connectionFailed
    case timedOut
    case shutdown
}
