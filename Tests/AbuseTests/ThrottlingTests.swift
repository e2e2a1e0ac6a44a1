import AppServer
import Foundation
import HeraldCore
import NIOCore
import NIOPosix
import TestSupport
import Testing

@Suite("Abuse: rate limits, proxies and slow clients")
struct ThrottlingTests {
    static func get(_ path: String, from address: String? = nil) -> [UInt8] {
        RawHTTP.request(method: "GET", path: path, headers: address.map { [("X-Forwarded-For", $0)] } ?? [])
    }

    @Test func aFloodFromOneAddressGets429WhileAnotherIsServed() async throws {
        let limits: AppServerLimits = {
            var limits = unlimited
            limits.perAddress = .init(20, per: .seconds(86_400))
            limits.trustedProxies = ["127.0.0.1"]
            return limits
        }()
        try await withIntakeDatabase { intake, db, _ in
            try await withServer(intake, limits: limits) { port in
                var statuses: [Int: Int] = [:]
                var retryAfter: [Int] = []
                let flood = 300
                for i in 0..<flood {
                    // The flood rotates its own X-Forwarded-For entries: only the
                    // hop the trusted proxy appended (the last) counts.
                    let response = try await RawHTTP.exchange(port: port, Self.get(i % 2 == 0 ? "/healthz" : "/v1/notification-config",
                                                                                from: "10.9.\(i % 250).1, 203.0.113.7"))
                    let status = response?.status ?? 0
                    statuses[status, default: 0] += 1
                    if status == 429 {
                        retryAfter.append(Int(response?.headers["retry-after"] ?? "") ?? 0)
                        #expect(response?.json?["error"] == "rate_limited")
                    }
                }
                print("abuse: flood of \(flood) requests from 203.0.113.7: \(statuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "))")
                #expect(statuses[200] == 20)
                #expect(statuses[429] == flood - 20)
                #expect(retryAfter.allSatisfy { $0 >= 1 && $0 <= 86_400 / 20 })
                // Another client behind the same proxy is still served.
                #expect(try await RawHTTP.exchange(port: port, Self.get("/healthz", from: "198.51.100.9"))?.status == 200)
                // The proxy's own traffic (no header) is its own client.
                #expect(try await RawHTTP.exchange(port: port, Self.get("/healthz"))?.status == 200)
            }
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 0)
        }
    }

    @Test func xForwardedForFromAnUntrustedPeerIsIgnored() async throws {
        let limits: AppServerLimits = {
            var limits = unlimited
            limits.perAddress = .init(5, per: .seconds(86_400))
            return limits
        }()
        try await withIntakeDatabase { intake, _, _ in
            try await withServer(intake, limits: limits) { port in
                var statuses: [Int] = []
                for i in 0..<20 {
                    statuses.append(try await RawHTTP.exchange(port: port, Self.get("/healthz", from: "192.0.2.\(i)"))?.status ?? 0)
                }
                #expect(statuses.filter { $0 == 200 }.count == 5)
                #expect(statuses.filter { $0 == 429 }.count == 15)
            }
        }
    }

    @Test func repliesToOneDeliveryAreLimited() async throws {
        let limits: AppServerLimits = {
            var limits = unlimited
            limits.perDelivery = .init(3, per: .seconds(86_400))
            return limits
        }()
        try await withIntakeDatabase { intake, db, _ in
            try await withServer(intake, limits: limits) { port in
                let body = HostileTable.object(HostileTable.fields(delivery: 1, action: "love_it"))
                var statuses: [Int] = []
                for _ in 0..<6 {
                    statuses.append(try await RawHTTP.exchange(port: port, RawHTTP.request(body: body))?.status ?? 0)
                }
                #expect(statuses == [202, 200, 200, 429, 429, 429])
                // Another delivery is not affected; a bad token does not spend delivery 2's allowance.
                for _ in 0..<5 {
                    let forged = HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "x", token: String(repeating: "A", count: 22)))
                    #expect(try await RawHTTP.exchange(port: port, RawHTTP.request(body: forged))?.status == 401)
                }
                let other = HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "fine"))
                #expect(try await RawHTTP.exchange(port: port, RawHTTP.request(body: other))?.status == 202)
            }
            #expect(try await db.scalar("SELECT count(*) FROM replies", as: Int64.self) == 2)
        }
    }

    @Test func oneAddressCannotHoldMoreThanItsConnections() async throws {
        let limits: AppServerLimits = {
            var limits = unlimited
            limits.maxConnectionsPerAddress = 3
            limits.headerTimeout = .seconds(120)
            return limits
        }()
        try await withIntakeDatabase { intake, _, _ in
            try await withServer(intake, limits: limits) { port in
                var held: [any Channel] = []
                for _ in 0..<4 {
                    held.append(try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                        .connect(host: "127.0.0.1", port: port).get())
                }
                // Whichever the server took fourth is closed at once; three stay open.
                let firstClosed = try await withThrowingTaskGroup(of: Int?.self) { group in
                    for (i, channel) in held.enumerated() {
                        group.addTask {
                            try? await channel.closeFuture.get()
                            return i
                        }
                    }
                    group.addTask {
                        try await Task.sleep(for: .seconds(30))
                        return nil
                    }
                    let first = try await group.next() ?? nil
                    group.cancelAll()
                    // Unblock the waits on the connections still open.
                    for channel in held { try? await channel.close().get() }
                    return first
                }
                #expect(firstClosed != nil)
                // Once they are gone, the address is served again.
                var answer: RawResponse?
                for _ in 0..<50 where answer == nil {
                    answer = try? await RawHTTP.exchange(port: port, Self.get("/healthz"))
                }
                #expect(answer?.status == 200)
            }
        }
    }

    @Test func pipelinedRequestsAreAllAnswered() async throws {
        try await withIntakeDatabase { intake, _, _ in
            try await withServer(intake, limits: unlimited) { port in
                let keepAlive = Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
                let bad = Array("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
                let reply = HostileTable.object(HostileTable.fields(delivery: 1, action: "bogus"))
                let post = Array("POST /v1/replies HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(reply.count)\r\n\r\n".utf8) + reply
                let last = Array("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
                let answer = String(decoding: try await RawHTTP.readAll(port: port, keepAlive + bad + post + keepAlive + last), as: UTF8.self)
                let statuses = answer.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
                #expect(statuses == ["200", "404", "422", "200", "200"])
            }
        }
    }

    @Test func aSlowClientIsDisconnected() async throws {
        let limits: AppServerLimits = {
            var limits = unlimited
            limits.headerTimeout = .seconds(1)
            limits.bodyTimeout = .seconds(1)
            return limits
        }()
        try await withIntakeDatabase { intake, _, _ in
            try await withServer(intake, limits: limits) { port in
                // Headers a byte every 100 ms: 300 bytes would take 30 s.
                let head = Array("POST /v1/replies HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Slow: \(String(repeating: "s", count: 200))\r\n\r\n".utf8)
                let slow = try await RawHTTP.trickle(port: port, head, interval: .milliseconds(100))
                print("abuse: slow client sent \(slow.sent) of \(head.count) header bytes before the server closed the connection")
                #expect(slow.closedByServer)
                #expect(slow.sent < head.count)

                // A body a byte every 100 ms after a prompt head: cut off too.
                let body = HostileTable.object(HostileTable.fields(delivery: 1, action: "love_it"))
                let request = RawHTTP.request(body: body)
                let headEnd = request.count - body.count
                let trickled = try await RawHTTP.trickleAfter(port: port, prefix: Array(request.prefix(headEnd)),
                                                              rest: Array(request.suffix(from: headEnd)), interval: .milliseconds(100))
                #expect(trickled.closedByServer)
                #expect(trickled.sent < body.count)

                // A connection that says nothing is closed too, and so is
                // one that falls silent after its answers (keep-alive).
                #expect(try await RawHTTP.waitsForClose(port: port, within: .seconds(10)))
                let keepAlive = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
                let started = ContinuousClock.now
                #expect(try await RawHTTP.waitsForClose(port: port, within: .seconds(10), after: keepAlive + keepAlive))
                #expect(ContinuousClock.now - started >= .milliseconds(900))

                // And the server still answers others.
                #expect(try await RawHTTP.exchange(port: port, ThrottlingTests.get("/healthz"))?.status == 200)
            }
        }
    }
}
