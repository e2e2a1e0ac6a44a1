import Foundation

/// One broadcast channel of a sale: it belongs to one app's bundle in one APNs environment.
public struct ChannelKey: Sendable, Hashable, Comparable {
    public var app: String
    public var environment: APNsEnvironment

    public init(app: String, environment: APNsEnvironment) {
        self.app = app
        self.environment = environment
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.app, a.environment.rawValue) < (b.app, b.environment.rawValue)
    }
}
