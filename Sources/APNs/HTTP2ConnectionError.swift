import NIOCore

/// A frame that breaks the framing layer: a connection error with this code (RFC 9113 §5.4.1).
struct HTTP2ConnectionError: Error, Equatable {
    var code: UInt32
}
