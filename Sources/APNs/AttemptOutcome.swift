import NIOCore

/// What one attempt came to, as seen by the transport.
enum AttemptOutcome: Sendable, Equatable {
    /// An HTTP answer: status and body (APNs's JSON error body, if any).
    case response(status: Int, body: ByteBuffer?)
    /// The server said it did not process the stream (GOAWAY with a lower last stream id,
    /// or REFUSED_STREAM): safe to send again on another connection, and not a failed attempt.
    case notProcessed
    /// Connecting failed or the connection/stream was lost before an answer.
    case connectionFailed
    /// The server refused the TLS handshake for the client certificate (a certificate alert).
    case certificateRejected
    /// No answer before the request's deadline.
    case timedOut
    /// The client is shutting down.
    case shutdown
}
