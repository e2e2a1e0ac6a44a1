import NIOCore

/// One request (one attempt) handed to the event loop.
struct OutboundRequest: Sendable {
    var head: RequestHead
    var body: ByteBuffer
    var endpoint: Endpoint
    /// Index of the credential (`APNsClient`'s list): connections are kept per endpoint and credential.
    var credential: Int = 0
    var deadline: NIODeadline
    var continuation: CheckedContinuation<AttemptOutcome, Never>

    func complete(_ outcome: AttemptOutcome) {
        continuation.resume(returning: outcome)
    }
}
