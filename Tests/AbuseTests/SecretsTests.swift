import Crypto
import Demo
import Foundation
import HeraldCore
import Logging
import NIOConcurrencyHelpers
import Runner
import Settings
import Store
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Every log line at any level, as text with all its metadata (what a
/// StreamLogHandler would print).
struct CapturingLogHandler: LogHandler {
    let lines: NIOLockedValueBox<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let text = "\(event.level) \(event.source) \(event.message) " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        lines.withLockedValue { $0.append(text) }
    }
}

@Suite("Secrets stay out of the logs")
struct SecretsTests {
    @Test func theWholeLoopAtTraceLevelLogsNoSecret() async throws {
        let lines = NIOLockedValueBox<[String]>([])
        let logger: Logger = {
            var l = Logger(label: "herald.secrets-test") { _ in CapturingLogHandler(lines: lines) }
            l.logLevel = .trace
            return l
        }()
        let secret = ReplySecret.generate()
        let secretText = secret.base64EncodedString()
        let password = "pw-" + UUID().uuidString

        try await TestDatabase.with { client, database in
            try await SQLScript.run(file: TestDatabase.sqlDirectory.appendingPathComponent("sample_data.sql"),
                                    on: client, logger: TestDatabase.logger)
            var config = try HeraldConfiguration(environment: [
                "DATABASE_URL": "postgres://unused@127.0.0.1/unused", "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
            ])
            config.database = database
            config.database.password = password  // the test server trusts loopback; the client still holds it
            config.replySecret = secret
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("herald-secrets-\(UUID())")
            defer { try? FileManager.default.removeItem(at: work) }
            let outcome = try await DemoLoop(configuration: config, workDirectory: work, logger: logger).execute()
            #expect(outcome.fleet.stored > 100)
            #expect(outcome.runs.map(\.figures.sent).reduce(0, +) > 600)
        }

        let output = lines.withLockedValue { $0 }.joined(separator: "\n")
        #expect(output.count > 10_000, "the loop logged at trace level")
        var secrets: [(String, String)] = [
            ("reply secret", secretText),
            ("database password", password),
            // Every P-256 PKCS#8 key (a .p8) starts with these bytes, whatever the key.
            (".p8 key", "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg"),
            (".p8 armour", "PRIVATE KEY"),
            // The provider JWT's header: {"alg":"ES256","kid":…
            ("app JWT", "eyJhbGciOiJFUzI1NiIs"),
        ]
        for n in 1...400 {
            let seed = Data(SHA256.hash(data: Data("herald demo device \(n)".utf8)))
            secrets.append(("device \(n) private key (base64)", seed.base64EncodedString()))
            secrets.append(("device \(n) private key (hex)", seed.map { String(format: "%02x", $0) }.joined()))
        }
        // glibc's strstr: String.contains took minutes for 801 needles in a log of this size.
        let leaked = output.withCString { log in secrets.filter { secret in secret.1.withCString { strstr(log, $0) != nil } } }.map(\.0)
        print("abuse: whole loop at trace level: \(lines.withLockedValue { $0.count }) log lines, \(secrets.count) secrets looked for, \(leaked.count) found")
        #expect(leaked.isEmpty, "in the log: \(leaked.joined(separator: ", "))")
    }

    @Test func theDatabasePasswordCanComeFromAFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("db-password-\(UUID())").path
        try "s3cret-from-file\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let config = try HeraldConfiguration(environment: [
            "DATABASE_URL": "postgres://herald_run@127.0.0.1:5432/herald", "DATABASE_PASSWORD_FILE": path,
            "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
        ])
        #expect(config.database.password == "s3cret-from-file")
        #expect(!config.description.contains("s3cret"))
        #expect(throws: ConfigurationError.self) {
            try HeraldConfiguration(environment: [
                "DATABASE_URL": "postgres://u:inline@127.0.0.1/herald", "DATABASE_PASSWORD_FILE": path,
                "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
            ])
        }
        #expect(throws: ConfigurationError.self) {
            try HeraldConfiguration(environment: [
                "DATABASE_URL": "postgres://u@127.0.0.1/herald", "DATABASE_PASSWORD_FILE": path + ".missing",
                "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
            ])
        }
    }
}
