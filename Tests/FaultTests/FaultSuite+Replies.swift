import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeraldCore
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

// MARK: Replies under faults

extension FaultSuite {
    /// The reply intake's promise under real faults: a reply is answered 2xx
    /// only once it is committed, and a client that retries with the same
    /// `reply_id` until it gets a 2xx has it stored exactly once. A real
    /// `herald serve` takes distinct replies from concurrent clients while
    /// its PostgreSQL is restarted and then while it is killed (SIGKILL) and
    /// started again on another port; afterwards every reply that was
    /// answered 2xx is in the database, none twice, and the clients' 202s
    /// (stored now) match the rows.
    @Test func acknowledgedRepliesSurviveADatabaseRestartAndAKilledServer() async throws {
        try await withScratch { dir in
            let cluster = try await DedicatedCluster.start(in: dir)
            do {
                let database = try DatabaseConfiguration(url: cluster.url, maxConnections: 4)
                let count = 600
                let deliveries = try await withMigrated(database) { client in
                    return try await sentDeliveries(client, devices: count)
                }
                let secret = replySecret()
                let replies = try Self.pendingReplies(deliveries, secret: secret)

                let server = try await Self.startIntake(database: database, secret: secret, dir: dir)

                let ledger = ReplyLedger()
                let senders = Self.sendAll(replies, server: server, ledger: ledger)
                try await waitUntil("a third of the replies answered", limit: .seconds(120)) { await ledger.answered >= count / 3 }
                try await cluster.restart()
                try await waitUntil("two thirds of the replies answered", limit: .seconds(120)) { await ledger.answered >= 2 * count / 3 }
                try await server.kill()
                try await server.start()
                try await senders.value
                try await server.stop()

                let answered = await ledger.snapshot()
                try await withPostgres(database, logger: TestDatabase.logger) { client in
                    let rows = try await Self.replyRows(client)
                    let lost = answered.statuses.keys.filter { rows[$0] == nil }.count
                    let doubled = rows.values.filter { $0 > 1 }.count
                    print("replies under faults: \(replies.count) sent, \(answered.statuses.count) answered 2xx "
                          + "(\(answered.statuses.values.filter { $0 == 202 }.count) stored, "
                          + "\(answered.statuses.values.filter { $0 == 200 }.count) duplicate), "
                          + "\(answered.retries) retries after 503 or a broken connection, "
                          + "\(rows.count) rows, \(lost) lost, \(doubled) doubled")
                    #expect(answered.statuses.count == replies.count)
                    #expect(lost == 0)
                    #expect(doubled == 0)
                    #expect(rows.count == replies.count)
                    // A 200 is answered only for a reply_id stored before: its
                    // earlier attempt was stored, and its answer lost with the
                    // killed server or the connection.
                    #expect(answered.retries > 0)
                }
            } catch {
                print("herald serve's log, last lines:\n\(dir.children.filter { $0.name == "serve" }.map { $0.tail(30) }.joined(separator: "\n--\n"))")
                await cluster.wipe()
                throw error
            }
            await cluster.wipe()
        }
    }

    /// A reply body and the reply_id it carries.
    struct PendingReply: Sendable {
        var id: UUID
        var body: Data
    }

    /// Posts `reply` until the server answers 2xx, retrying (same body, same
    /// reply_id) after a 503 or a broken connection, as the extension does.
    static func sendUntilAnswered(_ reply: PendingReply, server: IntakeServerProcess, ledger: ReplyLedger) async throws {
        let clock = ContinuousClock()
        let end = clock.now + .seconds(180)
        while clock.now < end {
            if let port = server.port {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/v1/replies")!)
                request.httpMethod = "POST"
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = reply.body
                request.timeoutInterval = 10
                let sent = clock.now
                if let (_, response) = try? await Self.replyClients.data(for: request),
                   let status = (response as? HTTPURLResponse)?.statusCode {
                    if status == 202 || status == 200 {
                        await ledger.answered(reply.id, status: status, sent: sent, at: clock.now)
                        return
                    }
                    #expect(status == 503, "reply \(reply.id) answered \(status)")
                    if status != 503 { return }
                }
            }
            await ledger.retried()
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Timeout(what: "reply \(reply.id) was never answered 2xx")
    }

    /// The clients' own session: `URLSession.shared` is the demo's too
    /// (DemoLoop's fleets, run by other suites at the same time), and its
    /// few connections per host left this scenario's replies waiting
    /// behind the demo's for minutes once.
    static let replyClients: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 16
        return URLSession(configuration: configuration)
    }()

    /// One reply (`love_it`, a new `reply_id`) to each of `deliveries`, with its token under `secret`.
    static func pendingReplies(_ deliveries: [Int64], secret: String) throws -> [PendingReply] {
        let tokens = ReplyTokens(secret: try ReplySecret(base64: secret))
        return deliveries.map { delivery in
            let id = UUID()
            return PendingReply(id: id, body: Data("""
                {"delivery": \(delivery), "token": "\(tokens.token(delivery: delivery))", "action": "love_it", \
                "occurred_at": "2026-11-20T10:00:00Z", "reply_id": "\(id.uuidString)"}
                """.utf8))
        }
    }

    /// A `herald serve` on `database` as `intakeEnvironment` has it, listening.
    static func startIntake(database: DatabaseConfiguration, secret: String, dir: Scratch) async throws -> IntakeServerProcess {
        let server = IntakeServerProcess(environment: try await Self.intakeEnvironment(database: database, secret: secret),
                                         directory: dir)
        try await server.start()
        return server
    }

    /// The environment of a `herald serve` child: a member of herald_intake,
    /// as docs/operators.md has it, with limits no test client reaches.
    static func intakeEnvironment(database: DatabaseConfiguration, secret: String) async throws -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["DATABASE_URL"] = try await TestDatabase.member(of: "herald_intake", database).description
        env["HERALD_REPLY_SECRET"] = secret
        env["LOG_LEVEL"] = "notice"
        env["HERALD_LOG_FORMAT"] = "json"
        env["HERALD_RATE_ADDRESS"] = "1000000"
        env["HERALD_RATE_ADDRESS_BURST"] = "1000000"
        env["HERALD_HTTP_MAX_CONNECTIONS_PER_ADDRESS"] = "64"
        return env
    }

    /// The stored replies, how many rows each `reply_id` has.
    static func replyRows(_ client: Database) async throws -> [UUID: Int] {
        var rows: [UUID: Int] = [:]
        for try await id in try await client.query("SELECT reply_id FROM replies", logger: TestDatabase.logger)
            .decode(UUID.self) { rows[id, default: 0] += 1 }
        return rows
    }

    /// Sends every reply over 12 concurrent lanes, each until it is answered 2xx, a lane's
    /// replies at least `spacing` apart.
    static func sendAll(_ replies: [PendingReply], server: IntakeServerProcess, ledger: ReplyLedger,
                        spacing: Duration = .zero) -> Task<Void, any Error> {
        Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<12 {
                    group.addTask {
                        for index in stride(from: lane, to: replies.count, by: 12) {
                            if spacing > .zero { try await Task.sleep(for: spacing) }
                            try await Self.sendUntilAnswered(replies[index], server: server, ledger: ledger)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    actor ReplyLedger {
        private(set) var statuses: [UUID: Int] = [:]
        private(set) var retries = 0
        /// When each answered reply's answered request was sent, and when its answer came.
        private(set) var times: [(sent: ContinuousClock.Instant, answered: ContinuousClock.Instant)] = []
        var answered: Int { statuses.count }

        func answered(_ id: UUID, status: Int, sent: ContinuousClock.Instant, at: ContinuousClock.Instant) {
            #expect(statuses[id] == nil, "reply \(id) answered twice")
            statuses[id] = status
            times.append((sent, at))
        }

        /// Replies sent while the database was down (`from..<to`) and answered 2xx once it was
        /// back: the intake held them through the outage rather than refusing them.
        func heldThrough(from: ContinuousClock.Instant, to: ContinuousClock.Instant) -> Int {
            times.filter { $0.sent >= from && $0.sent < to && $0.answered > to }.count
        }

        func retried() { retries += 1 }
        func snapshot() -> (statuses: [UUID: Int], retries: Int) { (statuses, retries) }
    }

    /// `herald serve` as a child process on a port of its choosing, which it
    /// logs; killed and started again, it picks another. Started, killed and
    /// stopped by the test's own task; the port is read by the clients.
    final class IntakeServerProcess: @unchecked Sendable {
        let environment: [String: String]
        let directory: Scratch
        private var child: Child?
        private let lock = NSLock()
        private var current: Int?

        init(environment: [String: String], directory: Scratch) {
            self.environment = environment
            self.directory = directory
        }

        /// Where it listens now; nil while it is down.
        var port: Int? { lock.withLock { current } }

        func start() async throws {
            let child = try Child(name: "serve", arguments: ["serve", "--port", "0"], environment: environment, directory: directory)
            self.child = child
            try await waitUntil("herald serve listening", limit: .seconds(60)) {
                guard child.isRunning else { throw Timeout(what: "herald serve exited\n\(child.tail())") }
                return Self.listeningPort(child.text()) != nil
            }
            let port = Self.listeningPort(child.text())
            lock.withLock { current = port }
        }

        /// SIGHUP: `herald serve` reads its keys again.
        func hangUp() { child?.signal(SIGHUP) }

        /// Its log so far.
        func log() -> String { child?.text() ?? "" }

        func kill() async throws {
            lock.withLock { current = nil }
            child?.signal(SIGKILL)
            _ = try await child?.wait(limit: .seconds(30))
        }

        func stop() async throws {
            lock.withLock { current = nil }
            child?.signal(SIGTERM)
            let code = try await child?.wait(limit: .seconds(60))
            #expect(code == 0, "herald serve exited \(code ?? -1)")
        }

        /// The port of the log's "reply intake listening" line.
        static func listeningPort(_ log: String) -> Int? {
            for line in log.split(separator: "\n") where line.contains("reply intake listening") {
                guard let range = line.range(of: #""address":"[^"]*:([0-9]+)""#, options: .regularExpression) else { continue }
                let match = line[range].dropLast()
                if let colon = match.lastIndex(of: ":") { return Int(match[match.index(after: colon)...]) }
            }
            return nil
        }
    }
}
