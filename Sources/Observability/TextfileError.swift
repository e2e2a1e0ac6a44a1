import Foundation
import Metrics
import NIOConcurrencyHelpers
import Prometheus
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public struct TextfileError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String
    public var description: String { "cannot write the metrics file \(path): \(reason)" }
}
