import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// A channel whose sale is over: deleted once its dismissal date has passed.
public struct ChannelToDelete: Sendable, Hashable {
    public var sale: Int64
    public var key: ChannelKey
    public var channel: String
}
