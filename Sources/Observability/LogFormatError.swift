import Foundation
import Logging
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public struct LogFormatError: Error, CustomStringConvertible {
    public let value: String
    public var description: String { "HERALD_LOG_FORMAT must be json, text or auto, not \"\(value)\"" }
}
