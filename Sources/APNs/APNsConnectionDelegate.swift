import NIOCore

protocol APNsConnectionDelegate: AnyObject {
    /// The server's first SETTINGS arrived: the connection can take streams.
    func connectionBecameReady(_ connection: APNsConnectionHandler)
    /// Streams finished or the server raised its stream limit.
    func connectionHasCapacity(_ connection: APNsConnectionHandler)
    /// GOAWAY received (or stream ids used up): no new streams on it.
    func connectionIsDraining(_ connection: APNsConnectionHandler)
    /// The channel closed (or never opened).
    func connectionClosed(_ connection: APNsConnectionHandler, wasReady: Bool)
}
