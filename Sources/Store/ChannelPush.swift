import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A step's push to one channel, claimed by a run.
public struct ChannelPush: Sendable, Hashable {
    public var key: ChannelKey
    public var channel: String
    /// Attempts so far, this one included.
    public var attempts: Int
}
