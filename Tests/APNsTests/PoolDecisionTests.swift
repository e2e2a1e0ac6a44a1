@testable import APNs
import NIOCore
import Testing

/// The connection pool's decisions on plain values: requests are strings, connections are names,
/// free streams a dictionary.
@Suite("Connection pool decisions")
struct PoolDecisionTests {
    typealias Pool = ConnectionPoolDecisions<String, String>

    static let now = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    static let later = now + .seconds(30)

    @Test("the first request waits and opens one connection; more wait without opening another while it connects")
    func firstRequest() {
        var pool = Pool(maxConnections: 2)
        let firstDecision = pool.submit("a", deadline: Self.later, free: { _ in 0 })
        #expect(firstDecision == .wait(openConnection: true))
        pool.connectionOpening("A")
        let secondDecision = pool.submit("b", deadline: Self.later, free: { _ in 0 })
        #expect(secondDecision == .wait(openConnection: false))
        #expect(pool.waitingCount == 2)
        // Ready with room for one: the oldest goes; the other still waits, so a second connection opens.
        pool.connectionReady("A")
        let drained = pool.drain(free: { $0 == "A" ? 1 : 0 })
        #expect(drained.sends.map { $0.0 } == ["a"])
        #expect(drained.sends.map { $0.1 } == ["A"])
        #expect(drained.openConnection)
        pool.connectionOpening("B")
        pool.connectionReady("B")
        let rest = pool.drain(free: { $0 == "B" ? 5 : 0 })
        #expect(rest.sends.map { $0.0 } == ["b"])
        #expect(rest.sends.map { $0.1 } == ["B"])
        #expect(!rest.openConnection)
        #expect(pool.waitingCount == 0)
    }

    @Test("a request goes to the connection with the most free streams; none free means it waits, up to the connection limit")
    func picking() {
        var pool = Pool(maxConnections: 2)
        pool.connectionOpening("A")
        pool.connectionReady("A")
        pool.connectionOpening("B")
        pool.connectionReady("B")
        var free = ["A": 3, "B": 7]
        var decision = pool.submit("a", deadline: Self.later, free: { free[$0] ?? 0 })
        #expect(decision == .send("B"))
        free = ["A": 3, "B": 3]
        decision = pool.submit("b", deadline: Self.later, free: { free[$0] ?? 0 })
        #expect(decision == .send("A"))  // the first of equals
        free = ["A": 0, "B": 0]
        decision = pool.submit("c", deadline: Self.later, free: { free[$0] ?? 0 })
        #expect(decision == .wait(openConnection: false))  // at the limit
        // While one waits, a new request queues behind it even when a stream is free (first come, first sent).
        free = ["A": 1, "B": 0]
        decision = pool.submit("d", deadline: Self.later, free: { free[$0] ?? 0 })
        #expect(decision == .wait(openConnection: false))
        let drained = pool.drain(free: { free[$0] ?? 0 })
        #expect(drained.sends.map { $0.0 } == ["c"])
        #expect(pool.waitingCount == 1)
        // Spread over free streams, most free first, one stream each.
        free = ["A": 1, "B": 2]
        _ = pool.submit("e", deadline: Self.later, free: { _ in 0 })
        _ = pool.submit("f", deadline: Self.later, free: { _ in 0 })
        let spread = pool.drain(free: { free[$0] ?? 0 })
        #expect(spread.sends.map { $0.0 } == ["d", "e", "f"])
        #expect(spread.sends.map { $0.1 } == ["B", "A", "B"])
    }

    @Test("a draining connection (GOAWAY) takes no more requests; another opens when requests wait")
    func draining() {
        var pool = Pool(maxConnections: 1)
        pool.connectionOpening("A")
        pool.connectionReady("A")
        let decision = pool.submit("a", deadline: Self.later, free: { _ in 1 })
        #expect(decision == .send("A"))
        let openAnother = pool.connectionDraining("A")
        #expect(!openAnother)  // nothing waits
        #expect(pool.connections.isEmpty)
        let waits = pool.submit("b", deadline: Self.later, free: { _ in 1 })
        #expect(waits == .wait(openConnection: true))
        pool.connectionOpening("B")
        // The drained connection closes later: nothing changes for the waiting request.
        let closed = pool.connectionClosed("A", wasReady: true)
        #expect(closed.failed.isEmpty)
        #expect(!closed.openConnection)
        #expect(pool.waitingCount == 1)
    }

    @Test("a failed connect fails the waiting requests only when no other connection can serve them")
    func connectFailures() {
        var pool = Pool(maxConnections: 2)
        _ = pool.submit("a", deadline: Self.later, free: { _ in 0 })
        _ = pool.submit("b", deadline: Self.later, free: { _ in 0 })
        pool.connectionOpening("A")
        let failed = pool.connectFailed("A")
        #expect(failed.failed == ["a", "b"])
        #expect(!failed.openConnection)
        #expect(pool.waitingCount == 0)

        // With another connection up, the requests keep waiting and another attempt is made.
        pool.connectionOpening("B")
        pool.connectionReady("B")
        _ = pool.submit("c", deadline: Self.later, free: { _ in 0 })
        pool.connectionOpening("C")
        let second = pool.connectFailed("C")
        #expect(second.failed.isEmpty)
        #expect(second.openConnection)
        #expect(pool.waitingCount == 1)

        // A connection that closes before HTTP/2 was set up (TLS refused) is a failed attempt too.
        var other = Pool(maxConnections: 2)
        _ = other.submit("x", deadline: Self.later, free: { _ in 0 })
        other.connectionOpening("X")
        let closedEarly = other.connectionClosed("X", wasReady: false)
        #expect(closedEarly.failed == ["x"])
        // Reported twice (connect failed after the channel closed): the second report changes nothing.
        let reportedAgain = other.connectFailed("X")
        #expect(reportedAgain.failed.isEmpty)
    }

    @Test("waiting requests past their deadline time out, oldest first")
    func deadlines() {
        var pool = Pool(maxConnections: 1)
        _ = pool.submit("a", deadline: Self.now + .seconds(1), free: { _ in 0 })
        _ = pool.submit("b", deadline: Self.now + .seconds(2), free: { _ in 0 })
        _ = pool.submit("c", deadline: Self.now + .seconds(9), free: { _ in 0 })
        let none = pool.expire(now: Self.now)
        #expect(none.isEmpty)
        let expired = pool.expire(now: Self.now + .seconds(2))
        #expect(expired == ["a", "b"])
        #expect(pool.waitingCount == 1)
    }

    @Test("graceful shutdown refuses new requests and still sends waiting ones; shutdown fails what waits")
    func shuttingDown() {
        var pool = Pool(maxConnections: 1)
        _ = pool.submit("a", deadline: Self.later, free: { _ in 0 })
        pool.refuseNew()
        let refused = pool.submit("b", deadline: Self.later, free: { _ in 5 })
        #expect(refused == .refuse)
        pool.connectionOpening("A")
        pool.connectionReady("A")
        let drained = pool.drain(free: { _ in 5 })
        #expect(drained.sends.map { $0.0 } == ["a"])

        var other = Pool(maxConnections: 1)
        _ = other.submit("x", deadline: Self.later, free: { _ in 0 })
        _ = other.submit("y", deadline: Self.later, free: { _ in 0 })
        let failed = other.shutdown()
        #expect(failed == ["x", "y"])
        let after = other.submit("z", deadline: Self.later, free: { _ in 5 })
        #expect(after == .refuse)
        #expect(!other.shouldOpenConnection)
        let late = other.connectFailed("Q")
        #expect(late.failed.isEmpty)
    }
}
