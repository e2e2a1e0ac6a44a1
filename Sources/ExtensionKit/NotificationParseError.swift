import Foundation

/// Why a notification's userInfo is not a Herald notification.
public struct NotificationParseError: Error, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    private enum Code: Hashable, Sendable {
        case notJSON
        case notHerald
        case malformed
    }

    private let code: Code
    private let detail: String

    private init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The input is not a JSON object (or the userInfo is not JSON-representable).
    public static let notJSON = Self(.notJSON)
    /// The payload has no `herald` object: the notification came from elsewhere.
    public static let notHerald = Self(.notHerald)
    /// A Herald field is missing or has the wrong type.
    public static let malformed = Self(.malformed)

    static func malformed(_ detail: String) -> Self { Self(.malformed, detail) }
    static func notJSON(_ detail: String) -> Self { Self(.notJSON, detail) }

    /// Two errors are equal when they are the same case; the detail is ignored.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the case only, as ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A one-line reason; for ``malformed``, the field at fault.
    public var description: String {
        switch code {
        case .notJSON: "notification payload is not a JSON object"
        case .notHerald: "notification payload has no herald section"
        case .malformed: detail.isEmpty ? "notification payload has a malformed herald section" : "notification payload: \(detail)"
        }
    }

    /// The reason and, when there is one, the detail.
    public var debugDescription: String {
        detail.isEmpty || code == .malformed ? description : "\(description) (\(detail))"
    }
}
