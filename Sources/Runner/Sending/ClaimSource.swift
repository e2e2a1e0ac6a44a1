import APNs
import HeraldCore
import Store

/// Where a sending session's claims come from, and where its outcomes go.
/// Each call that reaches the database retries transient faults itself.
protocol ClaimSource: Sendable {
    associatedtype Item: ClaimedItem
    /// Claims the next batch, reading on after `cursor` (0: from the start),
    /// leaving the items of `excludingApps` where they are (apps whose
    /// credential APNs refused in this run).
    func claim(after cursor: Int64, excludingApps: [String]) async throws -> ClaimBatch<Item>
    /// The notification of one claimed item, or why it cannot be sent.
    func notification(for item: Item) -> Result<APNsNotification, CampaignProblem>
    /// Writes outcomes; only those of rows this run still holds are written.
    func record(_ outcomes: [DeliveryOutcome]) async throws
    /// How long until the next item given back is due again (nil: none is
    /// left), leaving out the items of `excludingApps` (apps whose credential
    /// APNs refused in this run: they wait for a person, not for a retry).
    func nextDue(excludingApps: [String]) async throws -> Duration?
    /// Whether its notifications are past their expiry (checked as each batch is taken).
    var isExpired: Bool { get }
    /// Whether more items may still appear without a retry (an audience still being written).
    var moreComing: Bool { get }
    /// At most this many of its items in flight, when fewer than the run's concurrency
    /// (a paced campaign: only the next seconds of its send slots).
    var concurrencyLimit: Int? { get }
    /// Whether building a notification costs enough (sealing: about 130 µs
    /// of CPU) to be done on the cooperative pool's threads rather than on
    /// the transport's event loop, where the session runs.
    var buildsOffLoop: Bool { get }
}

extension ClaimSource {
    var isExpired: Bool { false }
    var moreComing: Bool { false }
    var concurrencyLimit: Int? { nil }
    var buildsOffLoop: Bool { false }
}
