import Foundation
import HeraldCore
import Logging
import PostgresNIO

/// What became of a step's push to a channel.
public enum ChannelPushOutcome: Sendable, Hashable {
    case sent(requestID: UUID)
    /// A transient answer (429, 5xx, a lost connection): sent again after `after`.
    case retry(after: Duration, error: String)
    case failed(String)
}
