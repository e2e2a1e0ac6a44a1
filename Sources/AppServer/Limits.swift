import Foundation
import HeraldCore
import Lifecycle
import NIOConcurrencyHelpers
import NIOCore

/// How much one client may ask of the app server (docs/operators.md, "Limits"). Every
/// value has a default fit for production; `herald serve` reads overrides
/// from the environment.
public struct AppServerLimits: Sendable, Hashable {
    /// A rate: `count` requests per `period`, with bursts of up to `burst`.
    public struct Rate: Sendable, Hashable, CustomStringConvertible {
        public var count: Int
        public var period: Duration
        public var burst: Int

        public init(_ count: Int, per period: Duration, burst: Int? = nil) {
            self.count = max(1, count)
            self.period = period
            self.burst = max(1, burst ?? count)
        }

        public var description: String { "\(count) per \(period), bursts of \(burst)" }
    }

    /// Requests of one client address, every endpoint together.
    public var perAddress = Rate(50, per: .seconds(1), burst: 100)
    /// Replies to one delivery (checked after its token): a retrying app
    /// needs a few, a replay loop gets 429.
    public var perDelivery = Rate(10, per: .seconds(60))
    /// Requests about one device (registration and key changes).
    public var perDevice = Rate(10, per: .seconds(60))
    /// Connections open at once; more wait in the kernel's backlog.
    public var maxConnections = 1000
    /// Connections open at once from one peer address (trusted proxies are
    /// exempt); one more is closed at once.
    public var maxConnectionsPerAddress = 64
    /// A connection must deliver a complete request head this soon after it
    /// opens or after its previous answer, else it is closed (slow or idle clients).
    public var headerTimeout: Duration = .seconds(10)
    /// A request's body must be complete this soon after its head.
    public var bodyTimeout: Duration = .seconds(30)
    /// The largest request head (request line and headers together), in bytes.
    public var maxHeaderBytes = 16 * 1024
    /// Peers whose `X-Forwarded-For` is believed (reverse proxies, load
    /// balancers), as IP addresses. Empty: the header is ignored and the
    /// client address is the peer's.
    public var trustedProxies: Set<String> = []
    /// Keys each limiter remembers at most (older idle ones are forgotten first).
    public var maxTrackedKeys = 100_000

    public init() {}
}

/// A rate limiter keyed by any string (a client address, a delivery, a
/// device): the generic cell rate algorithm, one timestamp per key, behind a
/// lock. A route picks the key that fits it (`RateLimits`).
public final class RateLimiter: Sendable {
    public enum Decision: Sendable, Hashable {
        case allowed
        /// Refused; a retry is allowed after this many seconds (at least 1).
        case limited(retryAfter: Int)
    }

    private let interval: Double
    private let tolerance: Double
    private let maxKeys: Int
    /// What the allowance is measured on (tests give their own).
    private let clock: any HeraldClock
    private let start: ContinuousClock.Instant
    private let state = NIOLockedValueBox<[String: Double]>([:])

    public init(_ rate: AppServerLimits.Rate, maxKeys: Int = 100_000, clock: any HeraldClock = .system) {
        let period = rate.period.inSeconds
        interval = period / Double(rate.count)
        tolerance = interval * Double(rate.burst - 1)
        self.maxKeys = max(16, maxKeys)
        self.clock = clock
        start = clock.now
    }

    private var now: Double {
        (clock.now - start).inSeconds
    }

    public func acquire(_ key: String) -> Decision {
        let now = self.now
        return state.withLockedValue { table in
            let arrival = max(table[key] ?? now, now)
            if arrival - now > tolerance {
                return .limited(retryAfter: max(1, Int((arrival - tolerance - now).rounded(.up))))
            }
            if table[key] == nil, table.count >= maxKeys {
                // Forget keys whose allowance is whole again (they behave as new);
                // if every key is busy, forget half of them rather than grow.
                table = table.filter { $0.value > now }
                if table.count >= maxKeys {
                    table = Dictionary(uniqueKeysWithValues: table.prefix(maxKeys / 2).map { ($0.key, $0.value) })
                }
            }
            table[key] = arrival + interval
            return .allowed
        }
    }

    /// Gives back the allowance one `acquire(key)` took: for a request the
    /// server could not serve, so that the client's retry is not counted.
    public func refund(_ key: String) {
        let now = self.now
        state.withLockedValue { table in
            guard let next = table[key] else { return }
            table[key] = next - interval > now ? next - interval : nil
        }
    }
}

/// The limiters of one server, by what they count.
public struct RateLimits: Sendable {
    public let perAddress: RateLimiter
    public let perDelivery: RateLimiter
    public let perDevice: RateLimiter

    public init(_ limits: AppServerLimits) {
        perAddress = RateLimiter(limits.perAddress, maxKeys: limits.maxTrackedKeys)
        perDelivery = RateLimiter(limits.perDelivery, maxKeys: limits.maxTrackedKeys)
        perDevice = RateLimiter(limits.perDevice, maxKeys: limits.maxTrackedKeys)
    }

    /// Throws 429 with `Retry-After` when `key` is over `limiter`'s rate.
    /// `what` completes "too many requests …" in the message.
    public func check(_ limiter: RateLimiter, key: String, what: String) throws(AppServerError) {
        if case .limited(let seconds) = limiter.acquire(key) {
            AppServerMetrics.rateLimited(limiter === perAddress ? "address" : limiter === perDelivery ? "delivery" : "device")
            throw AppServerError.rateLimited(what, retryAfter: seconds)
        }
    }
}

/// Which address a request comes from: the peer's, unless the peer is a
/// trusted proxy, in which case the right-most `X-Forwarded-For` entry that
/// is not itself a trusted proxy (entries further left are whatever the
/// client wrote, and are never believed).
public struct ClientAddress: Sendable {
    public let trustedProxies: Set<String>

    public init(trustedProxies: Set<String>) {
        self.trustedProxies = Set(trustedProxies.map(Self.normalized))
    }

    public func resolve(peer: SocketAddress?, forwardedFor: [String]) -> String {
        let peerAddress = peer?.ipAddress.map(Self.normalized) ?? "unknown"
        guard trustedProxies.contains(peerAddress), !forwardedFor.isEmpty else { return peerAddress }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }
            .map { Self.normalized($0.trimmingCharacters(in: .whitespaces)) }
        for hop in hops.reversed() where !trustedProxies.contains(hop) {
            // Only an address is a key; anything else counts as the proxy's own traffic.
            guard (try? SocketAddress(ipAddress: hop, port: 0)) != nil else { return peerAddress }
            return hop
        }
        return peerAddress
    }

    static func normalized(_ text: some StringProtocol) -> String {
        var s = String(text)
        // Lowercased only when there is something to lower (an address is
        // ASCII; a peer's IPv4 address has no letters): one allocation less a request.
        if s.utf8.contains(where: { ($0 >= 0x41 && $0 <= 0x5A) || $0 >= 0x80 }) { s = s.lowercased() }
        if s.hasPrefix("::ffff:"), s.contains(".") { s.removeFirst(7) }
        return s
    }
}

/// Open connections by peer address, shared by a server's connections.
final class ConnectionCounter: Sendable {
    private let open = NIOLockedValueBox<[String: Int]>([:])
    let limit: Int
    let exempt: Set<String>

    init(limit: Int, exempt: Set<String>) {
        self.limit = limit
        self.exempt = Set(exempt.map(ClientAddress.normalized))
    }

    /// Counts a new connection from `address`; false when it is one too many
    /// (and then it is not counted).
    func opened(_ address: String) -> Bool {
        if exempt.contains(address) { return true }
        return open.withLockedValue { table in
            let n = table[address, default: 0]
            guard n < limit else { return false }
            table[address] = n + 1
            return true
        }
    }

    func closed(_ address: String) {
        if exempt.contains(address) { return }
        open.withLockedValue { table in
            let n = table[address, default: 0] - 1
            table[address] = n > 0 ? n : nil
        }
    }
}
