import Foundation

public enum ActivityEvent: String, Sendable, Hashable {
    case start, update, end
}
