import APNsSimulator
import Foundation
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeraldCore
import PostgresNIO
import Store
import TestSupport
import Testing

/// The `herald` executable's own output (stdout and stderr) at every
/// `LOG_LEVEL`, while runs send with an app on a `.p12` and its password file
/// and an app on a PEM certificate and private key: neither the password nor
/// a line of either private key may appear, nor the run's reply secret or a
/// database password; nor, in `herald serve`'s and `herald ingest`'s output at
/// every level, the reply secret, the app backend's token or its private key.
@Suite("Secrets stay out of the herald executable's output", .serialized)
struct SecretsInOutputTests {
    static let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// The built executable: `HERALD_BIN`, else `.build/debug/herald` of this checkout.
    static func herald() throws -> String {
        if let path = ProcessInfo.processInfo.environment["HERALD_BIN"], !path.isEmpty { return path }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = repository.appendingPathComponent(".build/debug/herald").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Missing(what: "no herald executable at \(path): build it with swift build --product herald, or set HERALD_BIN")
        }
        return path
    }

    struct Missing: Error, CustomStringConvertible {
        var what: String
        var description: String { what }
    }

    /// Runs `herald arguments` to its end (at most `limit`), stdout and stderr together.
    static func run(_ arguments: [String], environment: [String: String], limit: TimeInterval = 120) async throws -> (status: Int32, output: String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("herald-output-\(UUID()).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try herald())
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date(timeIntervalSinceNow: limit)
        while process.isRunning {
            if Date() > deadline {
                process.terminate()
                throw Missing(what: "herald \(arguments.joined(separator: " ")) did not end within \(Int(limit)) s")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        try handle.close()
        return (process.terminationStatus, String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self))
    }

    /// Runs `herald serve` on a free port until it answers `/healthz` (at a level above notice it
    /// logs nothing at start), calls `body` with the port, then stops it (SIGTERM); its output,
    /// stdout and stderr together.
    static func serving(environment: [String: String], _ body: (Int) async throws -> Void) async throws -> String {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-\(UUID()).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let handle = try FileHandle(forWritingTo: log)
        let port = try freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try herald())
        process.arguments = ["serve", "--port", "\(port)"]
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        func text() -> String { String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self) }
        var up = false
        let deadline = Date(timeIntervalSinceNow: 30)
        while !up, Date() < deadline, process.isRunning {
            up = (try? await request(port: port, method: "GET", path: "/healthz", bearer: nil, body: nil)) == 200
            if !up { try await Task.sleep(for: .milliseconds(100)) }
        }
        guard up else { throw Missing(what: "herald serve did not answer on port \(port):\n\(text().suffix(2000))") }
        try await body(port)
        process.terminate()
        while process.isRunning { try await Task.sleep(for: .milliseconds(50)) }
        try handle.close()
        return text()
    }

    /// A port of the loopback no one listens on now (bound, read, closed).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Missing(what: "no socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw Missing(what: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// One HTTP/1.1 request to `herald serve`; its status.
    static func request(port: Int, method: String, path: String, bearer: String?, body: String?) async throws -> Int {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = method
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// The base64 lines of a PEM file (its armour left out).
    static func base64Lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(whereSeparator: \.isNewline).map(String.init)
            .filter { !$0.hasPrefix("-----") && $0.count >= 16 }
    }

    @Test func noLevelPrintsTheP12PasswordOrACertificatesPrivateKey() async throws {
        let p12Topic = "com.example.p12app", pemTopic = "com.example.pemapp"
        let sim = try await APNsSimulatorHarness.start(apps: [SimulatedApp(topic: p12Topic, auth: .certificate),
                                                              SimulatedApp(topic: pemTopic, auth: .certificate)])
        do {
            try await TestDatabase.with { client, database in
                let p12 = try sim.issueClientCertificate(topics: [p12Topic], name: "p12app")
                let pem = try sim.issueClientCertificate(topics: [pemTopic], name: "pemapp")
                let password = try String(contentsOfFile: p12.passwordFilePath, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
                var secrets: [(String, String)] = [(".p12 password", password)]
                for (label, issued) in [("the .p12's", p12), ("the PEM certificate's", pem)] {
                    for (n, line) in try Self.base64Lines(issued.privateKeyPath).enumerated() {
                        secrets.append(("\(label) private key, line \(n + 1)", line))
                    }
                }
                #expect(secrets.count >= 3 && password.count >= 8)

                try await client.exec(Fixtures.catalogue)
                try await client.exec(Fixtures.audience(count: 40))
                try await client.exec("""
                    INSERT INTO apps (name, display_name, topic) VALUES ('p12app', 'P12 app', '\(p12Topic)'), ('pemapp', 'PEM app', '\(pemTopic)');
                    UPDATE devices SET app = CASE WHEN id % 2 = 0 THEN 'p12app' ELSE 'pemapp' END;
                    """)

                var base = ProcessInfo.processInfo.environment
                for key in base.keys where key.hasPrefix("HERALD_") || key.hasPrefix("APNS_") || key == "LOG_LEVEL" || key.hasPrefix("DATABASE_") {
                    base[key] = nil
                }
                var owner = base
                owner["DATABASE_URL"] = database.description
                owner["LOG_LEVEL"] = "trace"
                var output = ""
                for command in [["apps", "add-credential", "p12app", "first", "--p12", p12.p12Path, "--password-file", p12.passwordFilePath],
                                ["apps", "add-credential", "pemapp", "first", "--certificate", pem.certificatePath, "--private-key", pem.privateKeyPath],
                                ["apps", "list"]] {
                    let (status, text) = try await Self.run(command, environment: owner)
                    #expect(status == 0, "herald \(command.joined(separator: " ")): \(text)")
                    output += text
                }

                var run = base
                let member = try await TestDatabase.member(of: "herald_job", database)
                run["DATABASE_URL"] = member.description
                let replySecret = ReplySecret.generate().base64EncodedString()
                run["HERALD_REPLY_SECRET"] = replySecret
                secrets.append(("the reply secret", replySecret))
                if let password = member.password, password.count >= 8 { secrets.append(("the run's database password", password)) }
                if let password = database.password, password.count >= 8 { secrets.append(("the owner's database password", password)) }
                run["APNS_URL"] = sim.clientConfiguration.baseURLOverride
                run["APNS_CA_PATH"] = sim.simulator.caCertificatePath
                var sentByLevel: [String] = []
                for level in Self.levels {
                    // A due campaign for each run, so that each sends with both credentials.
                    try await client.exec(Fixtures.campaign(name: "At \(level)"))
                    run["LOG_LEVEL"] = level
                    for format in ["json", "text"] {
                        run["HERALD_LOG_FORMAT"] = format
                        let (status, text) = try await Self.run(["run"], environment: run)
                        #expect(status == 0, "herald run at \(level) (\(format)) exited \(status):\n\(text.suffix(3000))")
                        output += text
                    }
                    let sent = try await client.scalar("""
                        SELECT count(*) FROM delivery_status d JOIN campaigns c ON c.id = d.campaign_id JOIN devices v ON v.id = d.device_id
                        WHERE c.name = 'At \(level)' AND d.status = 'sent' AND v.app IN ('p12app', 'pemapp')
                        """, as: Int64.self) ?? 0
                    #expect(sent == 40, "at \(level): \(sent) sent of 40")
                    sentByLevel.append("\(level) \(sent)")
                }

                // herald serve at every level, given the reply secret and the app backend's key,
                // answering a registration (with the backend's token) and a reply; herald ingest
                // storing a file of replies with the same secret.
                let keys = FileManager.default.temporaryDirectory.appendingPathComponent("herald-keys-\(UUID())")
                try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: keys) }
                let (jwtStatus, jwtText) = try await Self.run(["keys", "app-jwt", "--user", "u1", "--out", keys.path, "--minutes", "30"], environment: base)
                #expect(jwtStatus == 0, "herald keys app-jwt: \(jwtText)")
                let jwt = try #require(jwtText.split(whereSeparator: \.isWhitespace).map(String.init).first { $0.hasPrefix("ey") && $0.split(separator: ".").count == 3 })
                secrets.append(("the app backend's token", jwt))
                for (n, line) in try Self.base64Lines(keys.appendingPathComponent("app-jwt-private.pem").path).enumerated() {
                    secrets.append(("the app backend's private key, line \(n + 1)", line))
                }
                var serve = base
                serve["DATABASE_URL"] = try await TestDatabase.member(of: "herald_intake", database).description
                serve["HERALD_REPLY_SECRET"] = replySecret
                serve["HERALD_APP_JWT_PUBLIC_KEY_FILE"] = keys.appendingPathComponent("app-jwt-public.pem").path
                var answered: [Int] = []
                for level in Self.levels {
                    serve["LOG_LEVEL"] = level
                    for format in ["json", "text"] {
                        serve["HERALD_LOG_FORMAT"] = format
                        let text = try await Self.serving(environment: serve) { port in
                            answered.append(try await Self.request(port: port, method: "PUT", path: "/v1/devices/\(String(repeating: "ab", count: 32))",
                                                                   bearer: jwt, body: #"{"environment": "production", "user": "u1"}"#))
                            answered.append(try await Self.request(port: port, method: "POST", path: "/v1/replies", bearer: nil,
                                                                   body: #"{"token": "AAAA.BBBB", "action": "open"}"#))
                        }
                        output += text
                    }
                }
                #expect(answered.count == Self.levels.count * 4 && answered.allSatisfy { (200..<500).contains($0) }, "\(answered)")
                let file = keys.appendingPathComponent("replies.jsonl")
                try Data(#"{"token": "AAAA.BBBB", "action": "open"}"#.utf8 + [10]).write(to: file)
                var ingest = serve
                ingest["LOG_LEVEL"] = "trace"
                let (_, ingested) = try await Self.run(["ingest", file.path], environment: ingest)
                output += ingested

                let leaked = secrets.filter { output.contains($0.1) }.map(\.0)
                print("abuse: herald's own output at \(Self.levels.count) levels (apps add-credential, apps list, run with a .p12 and a PEM key, serve, ingest): \(output.count) bytes; sent \(sentByLevel.joined(separator: ", ")); \(secrets.count) secrets looked for, \(leaked.count) found")
                #expect(output.count > 10_000, "the runs at trace level logged")
                #expect(leaked.isEmpty, "in herald's output: \(leaked.joined(separator: ", "))")
            }
        } catch {
            await sim.stop()
            throw error
        }
        await sim.stop()
    }
}
