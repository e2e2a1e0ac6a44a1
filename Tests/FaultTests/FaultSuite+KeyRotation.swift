import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeraldCore
import PostgresNIO
import AppServer
import Store
import Testing
import TestSupport

// MARK: Keys replaced under load

extension FaultSuite {
    /// A real `herald serve` under a steady load of replies and device
    /// registrations while both of its keys are replaced, each the way
    /// docs/operators.md ("Rotating keys") says: the app backend's
    /// registration key (the new one added beside the old, SIGHUP, the
    /// backend switches, the old one removed, SIGHUP) and the reply secret
    /// (the configuration file names the new secret and the previous one
    /// with the end of its grace period, SIGHUP, runs sign with the new
    /// one, replies carrying either keep coming). Not one request is
    /// refused; afterwards the retired keys are.
    @Test func theServersKeysRotateUnderLoadWithNoRefusedRequest() async throws {
        try await withScratch { scratch in
            // The scratch folder is the test's own; the database's closure is @Sendable.
            let dir = UncheckedScratch(scratch: scratch)
            try await TestDatabase.with { client, database in
                let devices = 60
                let deliveries = try await sentDeliveries(client, devices: devices)
                let shop = try await AppTokenIssuer()
                let companionOld = try await AppTokenIssuer()
                let companionNew = try await AppTokenIssuer(algorithm: .eddsa)
                try await AppStore(client: client, logger: TestDatabase.logger).add(
                    name: "companion", displayName: "Companion", topic: "com.example.companion",
                    registrationKeys: [companionOld.publicKeyPEM])

                // The reply secrets live in files the configuration file names.
                let oldSecret = ReplySecret.generate()
                let newSecret = ReplySecret.generate()
                let oldFile = try dir.scratch.write("old.secret", oldSecret.base64EncodedString())
                let newFile = try dir.scratch.write("new.secret", newSecret.base64EncodedString())
                let config = try dir.scratch.write("herald.toml", "[reply]\nsecret_file = \"\(oldFile)\"\n")

                var env = ProcessInfo.processInfo.environment
                for key in env.keys where key.hasPrefix("HERALD_") || key.hasPrefix("APNS_") { env[key] = nil }
                // herald serve logs in as a member of herald_intake, as docs/operators.md has it.
                env["DATABASE_URL"] = try await TestDatabase.member(of: "herald_intake", database).description
                env["HERALD_CONFIG"] = config
                env["HERALD_APP_JWT_PUBLIC_KEY"] = shop.publicKeyPEM
                env["LOG_LEVEL"] = "notice"
                env["HERALD_LOG_FORMAT"] = "json"
                env["HERALD_RATE_ADDRESS"] = "1000000"
                env["HERALD_RATE_ADDRESS_BURST"] = "1000000"
                env["HERALD_RATE_DEVICE"] = "1000000"
                env["HERALD_RATE_DELIVERY"] = "1000000"
                let server = IntakeServerProcess(environment: env, directory: dir.scratch)
                try await server.start()
                let reloads = { server.log().components(separatedBy: "keys reloaded").count - 1 }
                func reload(_ what: String) async throws {
                    let before = reloads()
                    server.hangUp()
                    try await waitUntil("herald serve reloaded its keys (\(what))", limit: .seconds(30)) { reloads() > before }
                }

                let keys = RotatingKeys(backend: companionOld, tokens: ReplyTokens(secret: oldSecret))
                let ids = deliveries
                let load = Task {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for lane in 0..<4 {
                            group.addTask {
                                var n = lane
                                while await !keys.stopped {
                                    let delivery = ids[n % ids.count]
                                    let (tokens, backend) = await (keys.tokens, keys.backend)
                                    await keys.record("reply", try await Self.postReply(port: server.port, delivery: delivery,
                                                                                    token: tokens.token(delivery: delivery)))
                                    let user = "u\(n % devices)"
                                    await keys.record("registration", try await Self.register(
                                        port: server.port, device: n % devices, user: user,
                                        bearer: try await backend.token(user: user, app: "companion")))
                                    n += 4
                                }
                            }
                        }
                        try await group.waitForAll()
                    }
                }
                try await waitUntil("load under way", limit: .seconds(30)) { await keys.count >= 40 }

                // The registration key: the new one beside the old, the backend switches, the old one goes.
                #expect(try await AppStore(client: client, logger: TestDatabase.logger)
                    .addRegistrationKey(app: "companion", publicKeyPEM: companionNew.publicKeyPEM))
                try await reload("a second registration key")
                await keys.use(backend: companionNew)
                try await waitUntil("registrations with the new key", limit: .seconds(30)) { await keys.count >= 120 }
                try await client.exec("UPDATE apps SET registration_keys = ARRAY[registration_keys[2]] WHERE name = 'companion'")
                try await reload("the old registration key removed")

                // The reply secret: the new one signs; the old one's tokens are still taken until the stated time.
                let until = ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: 3600))
                _ = try dir.scratch.write("herald.toml", """
                    [reply]
                    secret_file = "\(newFile)"
                    previous_secret_file = "\(oldFile)"
                    previous_until = "\(until)"

                    """)
                try await reload("the reply secret replaced")
                let oldTokens = await keys.tokens
                await keys.use(tokens: ReplyTokens(secret: newSecret))
                try await waitUntil("replies under the new secret", limit: .seconds(30)) { await keys.count >= 200 }
                // Notifications sent before the change are still answered.
                for delivery in deliveries.prefix(10) {
                    await keys.record("reply", try await Self.postReply(port: server.port, delivery: delivery,
                                                                    token: oldTokens.token(delivery: delivery)))
                }
                await keys.stop()
                try await load.value

                let figures = await keys.figures
                print("keys rotated under load: \(figures.map { "\($0.key) \($0.value.map { "\($0.key)×\($0.value)" }.sorted().joined(separator: " "))" }.sorted().joined(separator: "; "))")
                #expect(figures.values.allSatisfy { $0.keys.allSatisfy { (200...299).contains($0) } }, "\(figures)")
                #expect((figures["reply"]?.values.reduce(0, +) ?? 0) >= 100)
                #expect((figures["registration"]?.values.reduce(0, +) ?? 0) >= 100)
                #expect(reloads() == 3)

                // The grace period ends: the configuration file names the new secret alone.
                _ = try dir.scratch.write("herald.toml", "[reply]\nsecret_file = \"\(newFile)\"\n")
                try await reload("the previous reply secret retired")

                // What was retired is refused now, with exactly the documented answer.
                let retiredKey = try await Self.answer(port: server.port, method: "PUT",
                                                       path: "/v1/devices/\(String(repeating: "01", count: 32))",
                                                       body: #"{"environment": "production", "user": "u1"}"#,
                                                       bearer: try await companionOld.token(user: "u1", app: "companion"))
                #expect(retiredKey.status == 401 && retiredKey.error == "bad_app_token", "the retired registration key: \(retiredKey)")
                let retiredSecret = try await Self.answer(port: server.port, method: "POST", path: "/v1/replies", body: """
                    {"delivery": \(deliveries[0]), "token": "\(oldTokens.token(delivery: deliveries[0]))", "action": "love_it", \
                    "occurred_at": "2026-11-20T10:00:00Z", "reply_id": "\(UUID().uuidString)"}
                    """, bearer: nil)
                #expect(retiredSecret.status == 401 && retiredSecret.error == "bad_token", "the retired reply secret: \(retiredSecret)")
                #expect(try await Self.postReply(port: server.port, delivery: deliveries[0],
                                                 token: ReplyTokens(secret: newSecret).token(delivery: deliveries[0])) == 202)
                try await server.stop()
            }
        }
    }

    struct UncheckedScratch: @unchecked Sendable {
        let scratch: Scratch
    }

    /// The keys the load signs with, and what the server answered.
    actor RotatingKeys {
        var backend: AppTokenIssuer
        var tokens: ReplyTokens
        var stopped = false
        var figures: [String: [Int: Int]] = [:]
        var count = 0

        init(backend: AppTokenIssuer, tokens: ReplyTokens) {
            self.backend = backend
            self.tokens = tokens
        }

        func use(backend: AppTokenIssuer) { self.backend = backend }
        func use(tokens: ReplyTokens) { self.tokens = tokens }
        func stop() { stopped = true }
        func record(_ what: String, _ status: Int) {
            figures[what, default: [:]][status, default: 0] += 1
            count += 1
        }
    }

    static func postReply(port: Int?, delivery: Int64, token: String) async throws -> Int {
        let body = """
            {"delivery": \(delivery), "token": "\(token)", "action": "love_it", \
            "occurred_at": "2026-11-20T10:00:00Z", "reply_id": "\(UUID().uuidString)"}
            """
        return try await send(port: port, method: "POST", path: "/v1/replies", body: body, bearer: nil)
    }

    static func register(port: Int?, device: Int, user: String, bearer: String) async throws -> Int {
        let token = String(repeating: String(format: "%02x", device % 256), count: 32)
        let body = #"{"environment": "production", "user": "\#(user)", "time_zone": "Europe/Paris", "app_version": "1.0"}"#
        return try await send(port: port, method: "PUT", path: "/v1/devices/\(token)", body: body, bearer: bearer)
    }

    /// The status and the `error` code of the answer.
    static func answer(port: Int?, method: String, path: String, body: String, bearer: String?) async throws -> (status: Int, error: String?) {
        guard let port else { throw Timeout(what: "herald serve is not listening") }
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        request.httpBody = Data(body.utf8)
        request.timeoutInterval = 10
        let (data, response) = try await replyClients.data(for: request)
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, json?["error"] as? String)
    }

    static func send(port: Int?, method: String, path: String, body: String, bearer: String?) async throws -> Int {
        guard let port else { throw Timeout(what: "herald serve is not listening") }
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        request.httpBody = Data(body.utf8)
        request.timeoutInterval = 10
        let (_, response) = try await replyClients.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }
}
