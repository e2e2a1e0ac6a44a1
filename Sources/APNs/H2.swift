import NIOCore

/// HTTP/2 frame types, flags, error codes and settings the client uses (RFC 9113 §6, §7, §11).
enum H2 {
    static let data: UInt8 = 0x0
    static let headers: UInt8 = 0x1
    static let priority: UInt8 = 0x2
    static let rstStream: UInt8 = 0x3
    static let settings: UInt8 = 0x4
    static let pushPromise: UInt8 = 0x5
    static let ping: UInt8 = 0x6
    static let goAway: UInt8 = 0x7
    static let windowUpdate: UInt8 = 0x8
    static let continuation: UInt8 = 0x9

    static let endStreamFlag: UInt8 = 0x1
    static let ackFlag: UInt8 = 0x1
    static let endHeadersFlag: UInt8 = 0x4
    static let paddedFlag: UInt8 = 0x8
    static let priorityFlag: UInt8 = 0x20

    static let noError: UInt32 = 0x0
    static let protocolError: UInt32 = 0x1
    static let flowControlError: UInt32 = 0x3
    static let frameSizeError: UInt32 = 0x6
    static let refusedStream: UInt32 = 0x7
    static let cancel: UInt32 = 0x8
    static let compressionError: UInt32 = 0x9

    static let settingHeaderTableSize: UInt16 = 0x1
    static let settingEnablePush: UInt16 = 0x2
    static let settingMaxConcurrentStreams: UInt16 = 0x3
    static let settingInitialWindowSize: UInt16 = 0x4
    static let settingMaxFrameSize: UInt16 = 0x5

    static let frameHeaderSize = 9
    static let defaultWindow = 65_535
    static let maxWindow = Int(Int32.max)
    static let defaultMaxFrameSize = 16_384
    static let clientPreface: StaticString = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
}
