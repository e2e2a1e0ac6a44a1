import Crypto
import Foundation
import PostgresNIO
import Store
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

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
