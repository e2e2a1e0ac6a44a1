import Crypto
import Foundation

/// Counters, for tests and the CLI.
public struct SimulatorStats: Sendable, Hashable {
    public var connections = 0
    public var requests = 0
    public var accepted = 0
    /// Answers other than 200, by reason.
    public var rejected: [String: Int] = [:]
    public var goAwaysSent = 0
    /// The most streams a connection had open at once while it advertised one stream.
    public var peakStreamsWhileLimitedToOne = 0
    /// The most streams a connection had open at once.
    public var peakStreams = 0
    /// PING frames received (keep-alive).
    public var pingsReceived = 0
    /// Broadcast requests accepted (each is one accepted notification per subscribed device).
    public var broadcasts = 0
    /// Channels made and deleted through the channel management API.
    public var channelsCreated = 0
    public var channelsDeleted = 0
}
