import Foundation
import HeraldCore

/// The broadcast channels the simulator made, per bundle id, and the devices whose activities
/// subscribed to each (a start accepted with `input-push-channel`).
struct ChannelRegistry {
    struct Channel {
        var bundle: String
        var storagePolicy: Int
        /// In the order they subscribed (the log's order); `subscribed` answers "already?" at once.
        var subscribers: [String] = []
        var subscribed: Set<String> = []
    }

    static let limitPerApp = 10_000
    private(set) var channels: [String: Channel] = [:]
    private var deleted: Set<String> = []

    /// Broadcasts still to answer with a fault (`APNsSimulator.failBroadcasts`), and its status.
    var failingBroadcasts = 0
    var broadcastFault = 503

    mutating func create(bundle: String, storagePolicy: Int, id: String, limit: Int = Self.limitPerApp) -> Bool {
        guard channels.values.filter({ $0.bundle == bundle }).count < limit else { return false }
        channels[id] = Channel(bundle: bundle, storagePolicy: storagePolicy)
        return true
    }

    func channel(_ id: String, of bundle: String) -> Channel? {
        guard let channel = channels[id], channel.bundle == bundle else { return nil }
        return channel
    }

    mutating func delete(_ id: String, of bundle: String) -> Bool {
        guard channel(id, of: bundle) != nil else { return false }
        channels.removeValue(forKey: id)
        deleted.insert(id)
        return true
    }

    func all(of bundle: String) -> [String] {
        channels.filter { $0.value.bundle == bundle }.map(\.key).sorted()
    }

    mutating func subscribe(_ device: String, to id: String, of bundle: String) {
        // A set: a channel may have millions of subscribers, too many to check one by one.
        guard channel(id, of: bundle) != nil, channels[id]?.subscribed.insert(device).inserted == true else { return }
        channels[id]?.subscribers.append(device)
    }
}
