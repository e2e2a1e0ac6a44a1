import Crypto
import Foundation
import HeraldCore
@testable import Settings
import Store
import TestSupport
import Testing

/// `--config FILE` / `HERALD_CONFIG`: real files in a temporary folder.
@Suite("Configuration file")
struct ConfigurationFileTests {
    /// A folder of its own, removed afterwards.
    final class Folder {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID().uuidString)")
        init() throws { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        deinit { try? FileManager.default.removeItem(at: url) }

        /// Writes `text` to `name` with `mode`; returns its path.
        func file(_ name: String, _ text: String, mode: Int = 0o600) throws -> String {
            let path = url.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
    }

    static let base = ["HERALD_SQL_DIR": TestDatabase.sqlDirectory.path]

    /// The message of the error `body` throws (nil when it throws none).
    static func message(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("the environment overrides the file, the file overrides the defaults")
    func precedence() throws {
        let folder = try Folder()
        let path = try folder.file("herald.toml", """
            # Settings of the batch run.
            [database]
            url = "postgres://herald_run@db.internal:5432/herald"
            connections = 12

            [run]
            batch_size = 50
            lease_seconds = 600

            [serve]
            port = 9090
            trusted_proxies = ["10.0.0.1", "::1"]

            [log]
            level = "debug"
            """)
        let env = Self.base.merging(["HERALD_BATCH_SIZE": "70", "HERALD_HTTP_PORT": ""]) { $1 }
        let config = try HeraldConfiguration(environment: env, configFile: path)
        #expect(config.batchSize == 70, "the environment wins")
        #expect(config.lease == .seconds(600), "the file wins over the default")
        #expect(config.database.maxConnections == 12)
        #expect(config.database.host == "db.internal" && config.database.username == "herald_run")
        #expect(config.serve.port == 9090, "an empty variable counts as unset")
        #expect(config.serve.trustedProxies == ["10.0.0.1", "::1"])
        #expect(config.concurrency == 200, "neither gives it: the default")
        #expect(config.logLevel == .debug)
        #expect(config.logFormat == nil)

        // HERALD_CONFIG names the file when --config does not; --config wins over it.
        let viaVariable = try HeraldConfiguration(environment: Self.base.merging(["HERALD_CONFIG": path]) { $1 })
        #expect(viaVariable.batchSize == 50)
        let other = try folder.file("other.toml", "[run]\nbatch_size = 7\n[database]\nurl = \"postgres://u@127.0.0.1/d\"\n")
        let flagWins = try HeraldConfiguration(environment: Self.base.merging(["HERALD_CONFIG": path]) { $1 },
                                               configFile: other)
        #expect(flagWins.batchSize == 7)
    }

    @Test("a value or a file the environment gives replaces the file's pair as a whole")
    func alternativesFollowTheEnvironment() throws {
        let folder = try Folder()
        let fileSecret = ReplySecret.generate().base64EncodedString()
        let envSecret = ReplySecret.generate().base64EncodedString()
        let secretFile = try folder.file("reply-secret", envSecret + "\n")
        let path = try folder.file("herald.toml", """
            [database]
            url = "postgres://u@127.0.0.1/d"
            [reply]
            secret = "\(fileSecret)"
            """)
        let fromFile = try HeraldConfiguration(environment: Self.base, configFile: path)
        #expect(fromFile.replySecret?.base64EncodedString() == fileSecret)
        let overridden = try HeraldConfiguration(
            environment: Self.base.merging(["HERALD_REPLY_SECRET_FILE": secretFile]) { $1 }, configFile: path)
        #expect(overridden.replySecret?.base64EncodedString() == envSecret)
    }

    @Test("a key the file does not know is an error naming it and the file")
    func unknownKeys() throws {
        let folder = try Folder()
        let typo = try folder.file("typo.toml", "[serve]\nprot = 9090\n")
        let message = try #require(Self.message { _ = try HeraldConfiguration(environment: Self.base, configFile: typo) })
        #expect(message.contains("serve.prot") && message.contains(typo))
        #expect(message.contains("port"), "it lists the keys [serve] may hold")

        let table = try folder.file("table.toml", "[sever]\nport = 9090\n")
        let tableMessage = try #require(Self.message { _ = try HeraldConfiguration(environment: Self.base, configFile: table) })
        #expect(tableMessage.contains("\"sever\"") && tableMessage.contains(table))

        let bare = try folder.file("bare.toml", "batch_size = 10\n")
        let bareMessage = try #require(Self.message { _ = try HeraldConfiguration(environment: Self.base, configFile: bare) })
        #expect(bareMessage.contains("batch_size") && bareMessage.contains(bare))

        let notTable = try folder.file("flat.toml", "run = 5\n")
        #expect(Self.message { _ = try HeraldConfiguration(environment: Self.base, configFile: notTable) }?
            .contains("[run]") == true)
    }

    @Test("a value of the wrong type or out of range names the key and the file")
    func badValues() throws {
        let folder = try Folder()
        let cases: [(String, String, [String])] = [
            ("range.toml", "[serve]\nport = 70000\n", ["serve.port", "HERALD_HTTP_PORT", "0 to 65535", "70000"]),
            ("type.toml", "[serve]\nport = \"8080\"\n", ["serve.port", "whole number", "string"]),
            ("list.toml", "[serve]\ntrusted_proxies = \"10.0.0.1\"\n", ["serve.trusted_proxies", "array"]),
            ("proxy.toml", "[serve]\ntrusted_proxies = [\"proxy.local\"]\n", ["serve.trusted_proxies", "proxy.local"]),
            ("choice.toml", "[log]\nformat = \"yaml\"\n", ["log.format", "json, text, auto", "yaml"]),
            ("lease.toml", "[run]\nlease_seconds = 1\n", ["run.lease_seconds", "HERALD_LEASE_SECONDS"]),
            ("textfile.toml", "[run]\nmetrics_textfile = \"/tmp/x.txt\"\n", ["run.metrics_textfile", ".prom"]),
            ("sql.toml", "[database]\nsql_dir = \"/nonexistent\"\n", ["database.sql_dir", "/nonexistent"]),
            ("url.toml", "[database]\nurl = \"mysql://u@h/d\"\n", ["database.url", "postgres://"]),
            ("syntax.toml", "[serve]\nport = \n", ["not valid TOML", "line 2"]),
        ]
        for (name, text, expected) in cases {
            let path = try folder.file(name, text)
            var env = Self.base
            if !text.contains("[database]\nurl") { env["DATABASE_URL"] = "postgres://u@127.0.0.1/d" }
            if name == "sql.toml" { env["HERALD_SQL_DIR"] = nil }
            let message = try #require(Self.message { _ = try HeraldConfiguration(environment: env, configFile: path) },
                                       "\(name) was accepted")
            #expect(message.contains(path), "\(name): \(message)")
            for part in expected {
                #expect(message.contains(part), "\(name): \(message) lacks \(part)")
            }
        }

        // The same value from the environment names the variable, as before.
        let env = Self.base.merging(["DATABASE_URL": "postgres://u@127.0.0.1/d", "HERALD_HTTP_PORT": "70000"]) { $1 }
        let message = try #require(Self.message { _ = try HeraldConfiguration(environment: env) })
        #expect(message.contains("HERALD_HTTP_PORT") && message.contains("70000") && !message.contains("serve.port"))
    }

    @Test("a missing or unreadable file is a clear error")
    func missingFile() throws {
        let folder = try Folder()
        let missing = folder.url.appendingPathComponent("nowhere.toml").path
        let env = Self.base.merging(["DATABASE_URL": "postgres://u@127.0.0.1/d"]) { $1 }
        let message = try #require(Self.message { _ = try HeraldConfiguration(environment: env, configFile: missing) })
        #expect(message.contains(missing) && message.contains("does not exist"))
        let viaVariable = try #require(Self.message {
            _ = try HeraldConfiguration(environment: env.merging(["HERALD_CONFIG": missing]) { $1 })
        })
        #expect(viaVariable.contains(missing))
        let directory = try #require(Self.message { _ = try HeraldConfiguration(environment: env, configFile: folder.url.path) })
        #expect(directory.contains("directory"))
    }

    @Test("secrets never appear in an error, and a file holding one that anyone may read is refused")
    func secrets() throws {
        let folder = try Folder()
        let secret = ReplySecret.generate().base64EncodedString()
        let password = "hunter2-\(UUID().uuidString.prefix(8))"
        let text = """
            [database]
            url = "postgres://herald_run:\(password)@127.0.0.1/herald"
            [reply]
            secret = "\(secret)"
            """
        // Readable by everyone: refused, naming the keys, never their values.
        let open = try folder.file("open.toml", text, mode: 0o644)
        let refused = try #require(Self.message { _ = try HeraldConfiguration(environment: Self.base, configFile: open) })
        #expect(refused.contains(open) && refused.contains("database.url") && refused.contains("reply.secret"))
        #expect(refused.contains("644"))
        #expect(!refused.contains(password) && !refused.contains(secret))
        // Readable by the owner and a group (root:herald 0640, a Kubernetes Secret with fsGroup): accepted.
        let grouped = try folder.file("grouped.toml", text, mode: 0o640)
        let config = try HeraldConfiguration(environment: Self.base, configFile: grouped)
        #expect(config.database.password == password)
        #expect(!config.description.contains(password))
        // No secret in it: any mode will do (a ConfigMap).
        let plain = try folder.file("plain.toml", "[database]\nurl = \"postgres://u@127.0.0.1/d\"\n", mode: 0o644)
        #expect(try HeraldConfiguration(environment: Self.base, configFile: plain).database.username == "u")

        // A bad secret names its key and file, not the value.
        let shortSecret = Data("short".utf8).base64EncodedString()
        let bad = try folder.file("bad.toml", "[database]\nurl = \"postgres://u@127.0.0.1/d\"\n[reply]\nsecret = \"\(shortSecret)\"\n")
        let badMessage = try #require(Self.message { _ = try HeraldConfiguration(environment: Self.base, configFile: bad) })
        #expect(badMessage.contains("reply.secret") && badMessage.contains(bad))
        #expect(!badMessage.contains(shortSecret))
        // A secret of the wrong type: its type is named, not its value.
        let typed = try folder.file("typed.toml", "[reply]\nsecret = 123456789\n")
        let typedMessage = try #require(Self.message { _ = try HeraldConfiguration(environment: Self.base, configFile: typed) })
        #expect(typedMessage.contains("reply.secret") && !typedMessage.contains("123456789"))
        // A syntax error on a secret's line shows the position, not the line.
        let broken = try folder.file("broken.toml", "[reply]\nsecret = \"\(secret)\n")
        let brokenMessage = try #require(Self.message { _ = try HeraldConfiguration(environment: Self.base, configFile: broken) })
        #expect(brokenMessage.contains("line 2") && !brokenMessage.contains(secret))
        // Not even the one character toml++ says it saw instead of what it expected.
        let trailing = try folder.file("trailing.toml", "[reply]\nsecret = \"\(secret)\" J\(secret)\n")
        let trailingMessage = try #require(Self.message {
            _ = try HeraldConfiguration(environment: Self.base, configFile: trailing)
        })
        #expect(trailingMessage.contains("line 2") && !trailingMessage.contains("'J'") && !trailingMessage.contains(secret))
        // A database URL from the file that is not one: named, the password not shown.
        let url = try folder.file("url.toml", "[database]\nurl = \"postgres://u:\(password)@/d?sslmode=maybe\"\n")
        let urlMessage = try #require(Self.message { _ = try HeraldConfiguration(environment: Self.base, configFile: url) })
        #expect(urlMessage.contains("database.url") && !urlMessage.contains(password))
    }

    @Test("the APNs settings come from the [apns] table; their errors name the file")
    func apnsFromTheFile() throws {
        let folder = try Folder()
        let key = P256.Signing.PrivateKey()
        let keyPath = try folder.file("AuthKey.p8", key.pemRepresentation)
        let text = """
            [database]
            url = "postgres://u@127.0.0.1/d"
            [apns]
            key_path = "\(keyPath)"
            key_id = "ABC123DEFG"
            team_id = "TEAM123456"
            topic = "com.example.app"
            url = "https://127.0.0.1:8443"
            max_connections = 2
            """
        let path = try folder.file("herald.toml", text)
        let apns = try HeraldConfiguration(environment: Self.base, configFile: path).apnsConfiguration()
        #expect(apns.keyID == "ABC123DEFG" && apns.topic == "com.example.app" && apns.maxConnections == 2)
        #expect(apns.baseURLOverride == "https://127.0.0.1:8443")
        // docs/operators.md's defaults of the keys left out are the client's own.
        #expect("\(apns.maxStreamsPerConnection)" == ConfigurationKey.apnsStreams.defaultText)
        #expect("\(apns.retry.maxAttempts)" == ConfigurationKey.apnsMaxAttempts.defaultText)
        #expect(apns.requestTimeout == .seconds(Int(ConfigurationKey.apnsTimeout.defaultText) ?? 0))
        let overridden = try HeraldConfiguration(environment: Self.base.merging(["APNS_KEY_ID": "ENVKEY0001"]) { $1 },
                                                 configFile: path).apnsConfiguration()
        #expect(overridden.keyID == "ENVKEY0001")

        let zero = try folder.file("zero.toml", text + "\nmax_attempts = 0\n")
        let message = try #require(Self.message {
            _ = try HeraldConfiguration(environment: Self.base, configFile: zero).apnsConfiguration()
        })
        #expect(message.contains("apns.max_attempts") && message.contains(zero))
        let pemBody = String(key.pemRepresentation.split(separator: "\n")[1])
        let missingKey = try folder.file("nokey.toml", text.replacingOccurrences(of: keyPath, with: keyPath + ".missing"))
        let keyMessage = try #require(Self.message {
            _ = try HeraldConfiguration(environment: Self.base, configFile: missingKey).apnsConfiguration()
        })
        #expect(keyMessage.contains("apns.key_path") && keyMessage.contains(missingKey) && !keyMessage.contains(pemBody))
    }

    @Test("the example file in Jobs/ is valid and holds only known keys")
    func exampleFile() throws {
        let example = TestDatabase.sqlDirectory.deletingLastPathComponent().appendingPathComponent("Jobs/herald.toml").path
        let file = try ConfigurationFile.load(path: example)
        #expect(file.secrets.isEmpty, "the example keeps its secrets in files")
        #expect(file.values["DATABASE_URL"]?.contains("@db.internal:5432/herald") == true)
        // Its values read as the commands read them (its secret files exist only on a server).
        let source = ConfigurationSource(environment: [:], file: file)
        #expect(try ServeSettings(source: source).trustedProxies == ["10.0.0.2"])
        #expect(try source.choice(.logFormat) == "json")
        #expect(try source.number(.stopGrace) == 20)
    }
}
