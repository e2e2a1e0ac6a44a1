@testable import AppServer
import Foundation
import HeraldCore
import NIOCore
import NIOPosix
import PostgresNIO
import ServiceLifecycle
import Store
import TestSupport
import Testing

/// Many apps answering at once, over the real server: each request gets its
/// own answer, every reply is stored once, and a server told to stop answers
/// what it has taken in before it goes.
@Suite("Concurrent replies over HTTP")
struct ConcurrentRepliesTests {
    static func body(_ i: Int) -> [UInt8] {
        switch i % 3 {
        case 0: HostileTable.object(HostileTable.fields(delivery: 1, action: "love_it"))
        case 1: HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "burst \(i)"))
        default: HostileTable.object(HostileTable.fields(delivery: 3, action: "dont_care"))
        }
    }

    /// Posts every body, `window` connections at a time; the statuses in order
    /// (0: no answer).
    static func postAll(_ port: Int, _ bodies: [[UInt8]], window: Int = 32) async throws -> [Int] {
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            var statuses = Array(repeating: 0, count: bodies.count)
            for (i, body) in bodies.enumerated() {
                if i >= window, let (j, status) = try await group.next() { statuses[j] = status }
                group.addTask { (i, try await RawHTTP.exchange(port: port, RawHTTP.request(body: body))?.status ?? 0) }
            }
            for try await (j, status) in group { statuses[j] = status }
            return statuses
        }
    }

    @Test func aBurstOfConcurrentRepliesIsStoredOnceEach() async throws {
        try await withIntakeDatabase { intake, db, _ in
            let bodies = (0..<240).map(Self.body)
            try await withServer(intake, limits: unlimited) { port in
                let first = try await Self.postAll(port, bodies)
                #expect(first == Array(repeating: 202, count: bodies.count))
                // Every app retries: nothing is stored twice.
                let again = try await Self.postAll(port, bodies)
                #expect(again == Array(repeating: 200, count: bodies.count))
            }
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == Int64(bodies.count))
            #expect(try await db.scalar("SELECT count(DISTINCT text) FROM replies", as: Int64.self) == Int64(bodies.count / 3))
        }
    }

    @Test func aStoppingServerAnswersTheRepliesItTookIn() async throws {
        try await withIntakeDatabase { intake, db, _ in
            let bodies = (0..<20).map(Self.body)
            let (ports, sink) = AsyncStream.makeStream(of: Int.self)
            let app = AppHTTPServer.application(intake: intake, host: "127.0.0.1", port: 0, limits: unlimited, logger: TestDatabase.logger,
                                               onRunning: { port in sink.yield(port) })
            let server = ServiceGroup(configuration: .init(services: [.init(service: app)], logger: TestDatabase.logger))
            let (released, releaseSink) = AsyncStream.makeStream(of: Void.self)
            let (locked, lockedSink) = AsyncStream.makeStream(of: Void.self)
            let statuses = try await withThrowingTaskGroup(of: (Int, Int)?.self) { tasks in
                tasks.addTask {
                    try await server.run()
                    return nil
                }
                // No batch can store anything while this holds the table.
                tasks.addTask {
                    try await db.holdingLock(on: "replies", locked: lockedSink, until: released)
                    return nil
                }
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next() else { throw CancellationError() }
                for await _ in locked {}
                for (i, body) in bodies.enumerated() {
                    tasks.addTask { (i, try await RawHTTP.exchange(port: port, RawHTTP.request(body: body))?.status ?? 0) }
                }
                for _ in 0..<2000 where intake.repliesWaiting < bodies.count {
                    try await Task.sleep(for: .milliseconds(5))
                }
                #expect(intake.repliesWaiting == bodies.count)
                // Stop the server while every reply waits for its batch, and
                // let the batches go on once it takes no new connection.
                await server.triggerGracefulShutdown()
                // At most 10 s: the replies' batch waits on the lock meanwhile,
                // and a database call that waits 60 s is answered 503.
                let until = ContinuousClock.now + .seconds(10)
                while ContinuousClock.now < until, await Self.accepts(port) {
                    try await Task.sleep(for: .milliseconds(5))
                }
                releaseSink.finish()
                var statuses = Array(repeating: 0, count: bodies.count)
                for try await case let (i, status)? in tasks { statuses[i] = status }
                return statuses
            }
            #expect(statuses == Array(repeating: 202, count: bodies.count))
            #expect(intake.repliesWaiting == 0)
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == Int64(bodies.count))
        }
    }

    /// Whether a TCP connection to `port` is accepted within 250 ms. A
    /// listener that no longer accepts but is not closed yet lets a connect
    /// hang (its backlog full): with NIO's default of 10 s a try, the wait
    /// above could outlast the held batch's 60 s deadline (a CI run: the
    /// test took 84 s and two replies were answered 503).
    static func accepts(_ port: Int) async -> Bool {
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(250))
                .connect(host: "127.0.0.1", port: port).get()
            try? await channel.close().get()
            return true
        } catch {
            return false
        }
    }
}
