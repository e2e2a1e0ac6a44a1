import APNs

/// What sends a notification: the APNs client, or a test double.
public protocol PushTransport: Sendable {
    func send(_ notification: APNsNotification) async -> APNsResult
    /// Ends what is in flight at once (a stop whose grace period is over).
    func shutdown() async
    /// Where a run's sending session is cheapest to run (nil: anywhere).
    var preferredExecutor: (any TaskExecutor)? { get }
}

extension PushTransport {
    public var preferredExecutor: (any TaskExecutor)? { nil }
}

extension APNsClient: PushTransport {
    /// The client's event loop: a session run there hands each request to
    /// its connection and takes each answer back without a thread switch.
    public var preferredExecutor: (any TaskExecutor)? { taskExecutor }
}
