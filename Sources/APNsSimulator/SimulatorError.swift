import Crypto
import Foundation

/// A simulator setup problem. The description names paths, never key material.
public struct SimulatorError: Error, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case tlsMaterial(String)
        case cannotOpenLog(String)
        case notStarted
        case alreadyStarted
    }
    private let code: Code

    static func tlsMaterial(_ detail: String) -> Self { Self(code: .tlsMaterial(detail)) }
    static func cannotOpenLog(_ path: String) -> Self { Self(code: .cannotOpenLog(path)) }
    static let notStarted = Self(code: .notStarted)
    static let alreadyStarted = Self(code: .alreadyStarted)

    public var description: String {
        switch code {
        case .tlsMaterial(let detail): return "APNs simulator TLS: \(detail)"
        case .cannotOpenLog(let path): return "APNs simulator: cannot open the log \(path)"
        case .notStarted: return "APNs simulator is not started"
        case .alreadyStarted: return "APNs simulator is already started"
        }
    }
}
