import Crypto
import Foundation
import PostgresNIO
import Store
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The built `herald` executable: `HERALD_BIN`, else `.build/debug/herald`
/// of this checkout (what `swift build` / `swift test` make).
enum HeraldBinary {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Missing: Error, CustomStringConvertible {
        var path: String
        var description: String { "no herald executable at \(path): build it with swift build, or set HERALD_BIN" }
    }

    static func path() throws -> String {
        if let explicit = ProcessInfo.processInfo.environment["HERALD_BIN"], !explicit.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: explicit) else { throw Missing(path: explicit) }
            return explicit
        }
        for candidate in [".build/debug/herald", ".build/x86_64-unknown-linux-gnu/debug/herald",
                          ".build/aarch64-unknown-linux-gnu/debug/herald"] {
            let path = repository.appendingPathComponent(candidate).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw Missing(path: repository.appendingPathComponent(".build/debug/herald").path)
    }
}

struct Timeout: Error, CustomStringConvertible {
    var what: String
    var description: String { "timed out: \(what)" }
}

/// A child process with its output in a file.
final class Child {
    let process = Process()
    let output: URL
    let name: String

    /// `user`: run as that uid and gid (through setpriv; the tests run as root).
    /// `wrapper`: a command that runs `herald` (e.g. unshare into a PID namespace).
    init(name: String, arguments: [String], environment: [String: String], directory scratch: Scratch,
         user: (uid: UInt32, gid: UInt32)? = nil, wrapper: [String] = []) throws {
        self.name = name
        output = scratch.directory.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(6)).log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        if let user {
            process.executableURL = URL(fileURLWithPath: Self.setpriv)
            process.arguments = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", "--",
                                 try HeraldBinary.path()] + arguments
        } else if let command = wrapper.first {
            process.executableURL = URL(fileURLWithPath: command)
            process.arguments = Array(wrapper.dropFirst()) + [try HeraldBinary.path()] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: try HeraldBinary.path())
            process.arguments = arguments
        }
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        process.currentDirectoryURL = HeraldBinary.repository
        try process.run()
        try? handle.close()
        scratch.children.append(self)
    }

    /// util-linux's setpriv, in every Debian system.
    static let setpriv = "/usr/bin/setpriv"

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    func signal(_ number: Int32) {
        if process.isRunning { kill(process.processIdentifier, number) }
    }

    /// The exit status (or 128 + signal), waiting at most `limit`.
    func wait(limit: Duration) async throws -> Int32 {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while process.isRunning {
            if clock.now > end {
                kill(process.processIdentifier, SIGKILL)
                throw Timeout(what: "\(name) did not exit within \(limit)\n\(tail())")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }

    func text() -> String {
        (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }

    func tail(_ lines: Int = 15) -> String {
        text().split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// What a process that trapped said of it: its last log lines before the
    /// crash report, the trap's message and the crashed thread's frames
    /// (the tail alone is the report's registers); the tail when it did not crash.
    func crashReport() -> String {
        let lines = text().split(separator: "\n", omittingEmptySubsequences: false)
        guard let at = lines.firstIndex(where: { $0.contains("Program crashed") || $0.contains("Fatal error") }) else { return tail() }
        return lines[max(0, at - 5)..<min(lines.count, at + 40)].joined(separator: "\n")
    }
}

/// The APNs simulator as its own process (`herald apns-sim`), stoppable and
/// restartable on the same port with the same certificates and key.
final class SimulatorProcess {
    let scratch: Scratch
    let directory: URL
    let keyID = "FAULTKEY01"
    let teamID = "FAULTTEAM1"
    let topic = "com.example.herald"
    var faults: [String]
    var port = 0
    var channelsPort = 0
    var child: Child?

    var logPath: String { directory.appendingPathComponent("accepted.jsonl").path }
    /// Every attempt at a device, whatever it was answered: `at` (ms), `token`, `status`.
    var attemptsPath: String { directory.appendingPathComponent("attempts.jsonl").path }
    var keyPath: String { directory.appendingPathComponent("AuthKey.p8").path }

    init(directory scratch: Scratch, faults: [String] = []) throws {
        self.scratch = scratch
        self.directory = scratch.directory
        self.faults = faults
        let key = P256.Signing.PrivateKey()
        // The signing key is a secret: only its owner may read it.
        guard FileManager.default.createFile(atPath: keyPath, contents: Data(key.pemRepresentation.utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw Timeout(what: "cannot write \(keyPath)")
        }
        try Data(key.publicKey.pemRepresentation.utf8).write(to: directory.appendingPathComponent("key.pub.pem"))
    }

    func start() async throws {
        let arguments = ["apns-sim", "--host", "127.0.0.1", "--port", "\(port)", "--channels-port", "0", "--cert-dir", directory.path, "--keep-certs",
                         "--public-key", directory.appendingPathComponent("key.pub.pem").path,
                         "--key-id", keyID, "--team-id", teamID, "--topic", topic, "--log", logPath,
                         "--attempts-log", attemptsPath] + faults
        let child = try Child(name: "apns-sim", arguments: arguments, environment: ProcessInfo.processInfo.environment,
                              directory: scratch)
        self.child = child
        let clock = ContinuousClock()
        let end = clock.now + .seconds(30)
        while clock.now < end {
            let lines = child.text().split(separator: "\n")
            if let line = lines.first(where: { $0.hasPrefix("APNS_URL=") }),
               let p = line.split(separator: ":").last.flatMap({ Int($0) }),
               let channels = lines.first(where: { $0.hasPrefix("APNS_CHANNELS_URL=") }),
               let c = channels.split(separator: ":").last.flatMap({ Int($0) }) {
                port = p
                channelsPort = c
                return
            }
            if !child.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Timeout(what: "the APNs simulator did not start\n\(child.tail())")
    }

    /// SIGTERM: the simulator flushes its log of accepted notifications and exits.
    func stop() async throws {
        guard let child else { return }
        child.signal(SIGTERM)
        _ = try await child.wait(limit: .seconds(20))
        self.child = nil
    }

    var environment: [String: String] {
        [
            "APNS_URL": "https://127.0.0.1:\(port)",
            "APNS_CHANNELS_URL": "https://127.0.0.1:\(channelsPort)",
            "APNS_CA_PATH": directory.appendingPathComponent("ca.pem").path,
            "APNS_KEY_PATH": keyPath,
            "APNS_KEY_ID": keyID,
            "APNS_TEAM_ID": teamID,
            "APNS_TOPIC": topic,
        ]
    }

    /// Waits until the accepted log has stopped growing for `quiet`, at most `limit`. The simulator
    /// writes its log every 200 ms, and on a loaded machine it may read a killed run's last
    /// requests later still: a fixed pause is not enough to read the log "after".
    func settledLog(quiet: Duration = .seconds(1), limit: Duration = .seconds(15)) async throws {
        func size() -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: logPath))?[.size] as? NSNumber)?.intValue ?? 0
        }
        let clock = ContinuousClock()
        let end = clock.now + limit
        var last = size()
        var stillSince = clock.now
        while clock.now - stillSince < quiet {
            if clock.now > end { throw Timeout(what: "the simulator's log still grows after \(limit)") }
            try await Task.sleep(for: .milliseconds(100))
            let now = size()
            if now != last {
                last = now
                stillSince = clock.now
            }
        }
    }

    /// Lines of the accepted log so far (it is flushed every 200 ms).
    func acceptedCount() -> Int {
        guard let data = FileManager.default.contents(atPath: logPath) else { return 0 }
        return data.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    }

    struct Accepted {
        var token: String
        var apnsID: String
        var collapseID: String?
        var delivery: Int64?
    }

    func accepted() throws -> [Accepted] {
        guard let data = FileManager.default.contents(atPath: logPath) else { return [] }
        var out: [Accepted] = []
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                  let token = object["token"] as? String, let id = object["apns_id"] as? String else { continue }
            let herald = (object["payload"] as? [String: Any])?["herald"] as? [String: Any]
            out.append(Accepted(token: token, apnsID: id.lowercased(), collapseID: object["apns-collapse-id"] as? String,
                                delivery: (herald?["d"] as? NSNumber)?.int64Value))
        }
        return out
    }
}

/// One scenario's files and child processes.
final class Scratch {
    let directory: URL
    var children: [Child] = []

    init(directory: URL) {
        self.directory = directory
    }

    func appendingPathComponent(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Writes `text` to the file `name` of the scenario's folder with `mode` (a secret's 0600 unless
    /// told otherwise) and returns its path.
    func write(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
        let path = appendingPathComponent(name).path
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
            throw Timeout(what: "cannot write \(path)")
        }
        return path
    }

    /// Whatever is still running when the scenario ends (it failed midway) is killed.
    func killChildren() async {
        for child in children where child.isRunning {
            child.signal(SIGCONT)
            child.signal(SIGKILL)
            _ = try? await child.wait(limit: .seconds(10))
        }
    }
}

/// A place for one scenario's files, removed afterwards, and its processes,
/// never left running.
func withScratch<T>(_ body: (Scratch) async throws -> T) async throws -> T {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-faults-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let scratch = Scratch(directory: dir)
    do {
        let result = try await body(scratch)
        await scratch.killChildren()
        try? FileManager.default.removeItem(at: dir)
        return result
    } catch {
        await scratch.killChildren()
        // Kept for a look: the logs of the processes are there.
        print("fault suite: files of the failed scenario kept in \(dir.path)")
        throw error
    }
}

/// What the ledger and the simulator's log say, compared.
struct Figures: CustomStringConvertible {
    var scenario: String
    var runs = 0
    var kills = 0
    var targeted = 0
    var delivered = 0
    var repeated = 0
    var lost = 0
    var failed = 0
    var sentInLedger = 0
    var repeatsWithOtherCollapseID = 0
    var repeatsWithOtherAPNsID = 0
    var ledgerAPNsIDMismatch = 0
    var leftover = 0

    var description: String {
        "fault suite [\(scenario)]: runs \(runs), kills \(kills), targeted \(targeted), delivered \(delivered), repeated \(repeated), lost \(lost), failed \(failed)"
    }
}

/// Compares the simulator's accepted log with the ledger of `campaign`.
func compare(_ scenario: String, client: Database, simulator: SimulatorProcess, campaign: Int64,
             collapseID: String) async throws -> Figures {
    try await compare(scenario, client: client, accepted: try simulator.accepted(), campaign: campaign, collapseID: collapseID)
}

func compare(_ scenario: String, client: Database, accepted: [SimulatorProcess.Accepted], campaign: Int64,
             collapseID: String) async throws -> Figures {
    var f = Figures(scenario: scenario)
    var ledger: [String: (status: String, apnsID: String?)] = [:]
    let rows = try await client.query("""
        SELECT dv.token, d.status, d.apns_id::text FROM delivery_status d JOIN devices dv ON dv.id = d.device_id
        WHERE d.campaign_id = \(campaign)
        """, logger: TestDatabase.logger)
    for try await (token, status, id) in rows.decode((String, String, String?).self) {
        ledger[token] = (status, id)
    }
    f.targeted = ledger.count
    f.sentInLedger = ledger.values.filter { $0.status == "sent" }.count
    f.failed = ledger.values.filter { $0.status == "failed" }.count
    f.leftover = ledger.values.filter { $0.status == "queued" || $0.status == "in_flight" }.count
    var firstID: [String: String] = [:]
    var count: [String: Int] = [:]
    for a in accepted {
        count[a.token, default: 0] += 1
        if a.collapseID != collapseID { f.repeatsWithOtherCollapseID += 1 }
        if let first = firstID[a.token] {
            if first != a.apnsID { f.repeatsWithOtherAPNsID += 1 }
        } else {
            firstID[a.token] = a.apnsID
        }
    }
    f.delivered = count.count
    f.repeated = count.values.reduce(0) { $0 + $1 - 1 }
    // Lost: a device the ledger says got it (or should have) that APNs never accepted.
    let notOwed: Set<String> = ["skipped", "invalid", "cancelled", "expired"]
    f.lost = ledger.filter { !notOwed.contains($0.value.status) && count[$0.key] == nil }.count
    f.ledgerAPNsIDMismatch = firstID.filter { ledger[$0.key]?.apnsID?.lowercased() != $0.value }.count
    return f
}

/// The environment of a `herald run` child, which logs in as a member of
/// `herald_job` (docs/operators.md, "Database roles"), never as the owner.
func workerEnvironment(database: DatabaseConfiguration, simulator: SimulatorProcess, secret: String,
                       extra: [String: String] = [:]) async throws -> [String: String] {
    var env = ProcessInfo.processInfo.environment
    env["DATABASE_URL"] = try await TestDatabase.member(of: "herald_job", database).description
    env["HERALD_REPLY_SECRET"] = secret
    env["HERALD_SQL_DIR"] = HeraldBinary.repository.appendingPathComponent("Sql").path
    env["LOG_LEVEL"] = "warning"
    for (k, v) in simulator.environment { env[k] = v }
    // A short APNs deadline keeps the lease (which must outlast one send) short.
    env["APNS_TIMEOUT_SECONDS"] = "3"
    env["HERALD_LEASE_SECONDS"] = "70"
    env["HERALD_RECORD_EVERY"] = "\(FaultSuite.recordEvery)"
    for (k, v) in extra { env[k] = v }
    return env
}

func replySecret() -> String {
    Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
}

/// Waits until `condition` holds, at most `limit`.
func waitUntil(_ what: String, limit: Duration, _ condition: () async throws -> Bool) async throws {
    let clock = ContinuousClock()
    let end = clock.now + limit
    while !(try await condition()) {
        if clock.now > end { throw Timeout(what: what) }
        try await Task.sleep(for: .milliseconds(50))
    }
}

/// `body` on a scenario's own database, migrated first.
func withMigrated<T: Sendable>(_ database: DatabaseConfiguration, _ body: @Sendable (Database) async throws -> T) async throws -> T {
    try await withPostgres(database, logger: TestDatabase.logger) { client in
        try await Migrator(directory: TestDatabase.sqlDirectory).migrate(client: client, logger: TestDatabase.logger)
        return try await body(client)
    }
}

/// A poster to `devices` devices, sent to each (as a run would have recorded
/// it): the deliveries replies may answer, by id.
func sentDeliveries(_ client: Database, devices: Int) async throws -> [Int64] {
    try await client.exec(Fixtures.catalogue + ";\n" + Fixtures.audience(count: devices) + ";\n"
        + Fixtures.campaign(name: "Poster") + ";\n" + """
        INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
        SELECT c.id, d.id, d.user_id, 'sent', now() FROM campaigns c CROSS JOIN devices d ORDER BY d.id
        """)
    var ids: [Int64] = []
    for try await id in try await client.query("SELECT id FROM delivery_status ORDER BY id", logger: TestDatabase.logger)
        .decode(Int64.self) { ids.append(id) }
    return ids
}
