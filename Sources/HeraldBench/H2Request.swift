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

/// One request (one attempt) on its way to a connection.
struct H2Request: Sendable {
    var headers: HPACKHeaders
    var body: ByteBuffer
    var deadline: NIODeadline
    var continuation: CheckedContinuation<H2Attempt, Never>
}
