import Metrics

/// The app server's own counters, recorded through swift-metrics (whatever
/// backend the process bootstrapped; `herald serve` exposes them at
/// `GET /metrics`). Names follow Prometheus's conventions.
public enum AppServerMetrics {
    public static let repliesStored = "herald_replies_stored_total"
    public static let repliesDuplicate = "herald_replies_duplicate_total"
    public static let rateLimitedName = "herald_rate_limited_total"
    public static let devicesRegistered = "herald_devices_registered_total"
    public static let receiptsStored = "herald_receipts_stored_total"
    public static let receiptsRefused = "herald_receipts_refused_total"

    /// Counted once per batch of the intake: a counter looked up per reply
    /// costs too much under load.
    static func replies(stored: Int, duplicates: Int) {
        if stored > 0 { Counter(label: repliesStored).increment(by: stored) }
        if duplicates > 0 { Counter(label: repliesDuplicate).increment(by: duplicates) }
    }
    /// `limit`: `address`, `delivery` or `device`.
    static func rateLimited(_ limit: String) { Counter(label: rateLimitedName, dimensions: [("limit", limit)]).increment() }
    static func deviceRegistered() { Counter(label: devicesRegistered).increment() }
    static func receipts(stored: Int, refused: Int) {
        if stored > 0 { Counter(label: receiptsStored).increment(by: stored) }
        if refused > 0 { Counter(label: receiptsRefused).increment(by: refused) }
    }
}
