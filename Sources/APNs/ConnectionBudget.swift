/// How the connections of the whole client stay within `APNsConfiguration.connectionBudget`,
/// over every pool (one host and credential each), with no I/O.
///
/// The rule:
/// - A pool that needs a connection opens one while the client's total is under the budget
///   (`maxConnections` still caps each pool).
/// - When the budget is spent, the pool waits for a slot (its requests wait meanwhile), and a
///   connection of another pool is reclaimed for it: first an idle one (nothing in flight for a
///   moment, `HostPool.idleGrace`, and nothing waiting in its pool), closed at once; else, only for a pool that has no connection
///   at all, a busy one is retired (it takes no new streams and closes once its streams are
///   answered), from the pool with the most connections. The caller counts a pool's only
///   connection as retirable only once it has served for a while (`HostPool.minimumHold`), so
///   connections are not torn down as fast as they open.
/// - A freed slot goes first to a waiting pool with no connection, then to the others in the
///   order they asked.
///
/// So the total never exceeds the budget, and every pool with work gets at least one connection
/// in its turn, even when more pools have work than the budget has connections.
struct ConnectionBudget<Pool: Hashable> {
    /// What the caller knows of a pool, to choose a connection to reclaim.
    struct Candidate: Equatable {
        var pool: Pool
        /// Connections that take new streams (retiring ones excluded).
        var connections: Int
        /// Of those, connections that can be closed at once (nothing in flight, nothing waiting).
        var idle: Int
        /// Of those, connections that may be retired.
        var retirable: Int
    }

    enum Reclaim: Equatable {
        /// Close an idle connection of this pool now.
        case closeIdle(Pool)
        /// Retire a connection of this pool: no new streams, closed once they are answered.
        case retire(Pool)
    }

    let limit: Int
    /// Connections counted per pool: from the grant until the connection closed (or failed).
    private(set) var counts: [Pool: Int] = [:]
    /// Pools waiting for a slot, in the order they asked.
    private(set) var waiting: [Pool] = []
    /// Reclaimed connections not closed yet: slots on their way.
    private(set) var reclaiming = 0
    private(set) var total = 0
    /// The largest `total` so far.
    private(set) var peak = 0
    /// Connections reclaimed so far, idle and busy (retired).
    private(set) var closedIdle = 0
    private(set) var retired = 0

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    func connections(of pool: Pool) -> Int { counts[pool] ?? 0 }

    /// A pool needs a connection: true when it may open one now (counted from here on); else it
    /// waits for a slot (see `reclaims` and `released`).
    mutating func acquire(_ pool: Pool) -> Bool {
        if total < limit {
            counts[pool, default: 0] += 1
            total += 1
            peak = max(peak, total)
            waiting.removeAll { $0 == pool }
            return true
        }
        if !waiting.contains(pool) { waiting.append(pool) }
        return false
    }

    /// The connections to reclaim for the waiting pools that no reclaim is under way for yet.
    mutating func reclaims(candidates: [Candidate]) -> [Reclaim] {
        guard waiting.count > reclaiming else { return [] }
        var candidates = candidates
        var chosen: [Reclaim] = []
        for pool in grantOrder().dropFirst(reclaiming) {
            let others = candidates.indices.filter { candidates[$0].pool != pool }
            if let index = others.filter({ candidates[$0].idle > 0 }).max(by: { candidates[$0].connections < candidates[$1].connections }) {
                candidates[index].idle -= 1
                candidates[index].connections -= 1
                candidates[index].retirable = max(0, candidates[index].retirable - 1)
                chosen.append(.closeIdle(candidates[index].pool))
                closedIdle += 1
            } else if connections(of: pool) == 0,
                let index = others.filter({ candidates[$0].retirable > 0 }).max(by: { candidates[$0].connections < candidates[$1].connections })
            {
                candidates[index].retirable -= 1
                candidates[index].connections -= 1
                chosen.append(.retire(candidates[index].pool))
                retired += 1
            }
        }
        reclaiming += chosen.count
        return chosen
    }

    /// A reclaim from `reclaims` could not be carried out (the connection was gone or busy).
    mutating func reclaimAbandoned() {
        reclaiming = max(0, reclaiming - 1)
    }

    /// A connection of `pool` closed (or failed to open); `reclaimed` when it was closed for the
    /// budget. Returns the pool that gets the freed slot (counted for it), nil when none waits.
    /// A pool that no longer needs it gives it back with `released(_, reclaimed: false)`.
    mutating func released(_ pool: Pool, reclaimed: Bool) -> Pool? {
        if let count = counts[pool], count > 0 {
            counts[pool] = count - 1 == 0 ? nil : count - 1
            total -= 1
        }
        if reclaimed { reclaiming = max(0, reclaiming - 1) }
        guard total < limit, let next = grantOrder().first else { return nil }
        waiting.removeAll { $0 == next }
        counts[next, default: 0] += 1
        total += 1
        peak = max(peak, total)
        return next
    }

    /// Waiting pools with no connection first, then the others, each group in asking order.
    private func grantOrder() -> [Pool] {
        waiting.filter { connections(of: $0) == 0 } + waiting.filter { connections(of: $0) > 0 }
    }
}
