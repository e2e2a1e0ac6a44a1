import APNsSimulator
import ArgumentParser
import Crypto
import Foundation
import Logging
import NIOPosix
import ServiceLifecycle

/// `herald apns-sim`: an APNs stand-in (HTTP/2 + TLS) for demos, staging and load tests.
struct APNsSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-sim",
        abstract: "Run an APNs simulator: HTTP/2 + TLS, validates like APNs, injects faults."
    )

    @Option(help: "Address to listen on (loopback by default).")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 8443

    @Option(name: .customLong("channels-port"), help: "Port of the broadcast channel management API, which APNs serves apart (default: --port + 1; a free one when --port is 0).")
    var channelsPort: Int?

    @Option(name: .customLong("cert-dir"), help: "Directory for the generated CA (ca.pem), certificate and key, the client CA (client-ca.pem) and issued client certificates.")
    var certDir = ".local/apns-sim"

    @Option(name: .customLong("key-id"), help: "Key id (kid) the provider tokens must carry.")
    var keyID = "SIMKEY0001"

    @Option(name: .customLong("team-id"), help: "Team id (iss) the provider tokens must carry.")
    var teamID = "SIMTEAM001"

    @Option(name: .customLong("public-key"), help: "PEM file of the P-256 public key that verifies tokens.")
    var publicKey: String?

    @Flag(name: .customLong("generate-key"), help: "Write a demo signing key (.p8, mode 0600) into the cert dir and trust it.")
    var generateKey = false

    @Option(help: "Allowed topic (bundle id); repeat for more.")
    var topic: [String] = []

    @Option(help: "File of unregistered device tokens: one per line, optionally followed by epoch seconds.")
    var unregistered: String?

    @Option(name: .customLong("fail-429"), help: "Share of requests answered 429 TooManyRequests (0…1).")
    var fail429 = 0.0

    @Option(name: .customLong("fail-500"), help: "Share of requests answered 500 InternalServerError (0…1).")
    var fail500 = 0.0

    @Option(name: .customLong("fail-503"), help: "Share of requests answered 503 ServiceUnavailable (0…1).")
    var fail503 = 0.0

    @Option(help: "Seed of the fault generator.")
    var seed: UInt64 = 42

    @Option(name: .customLong("goaway-after"), help: "Send GOAWAY on a connection after this many streams.")
    var goAwayAfter: Int?

    @Option(name: .customLong("latency-ms"), help: "Delay before each answer, in milliseconds.")
    var latencyMS = 0

    @Option(name: .customLong("max-streams"), help: "SETTINGS_MAX_CONCURRENT_STREAMS once a token is accepted.")
    var maxStreams = 1000

    @Option(name: .customLong("channel-id-bytes"), help: "Random bytes in each broadcast channel id it makes (base64; Apple states no size).")
    var channelIDBytes = 16

    @Option(help: "Append accepted notifications to this file as JSON lines.")
    var log: String?

    @Option(name: .customLong("attempts-log"), help: "Append every attempt at a device, whatever its answer, to this file as JSON lines (at, token, status, and the credential: key KID or certificate SERIAL).")
    var attemptsLog: String?

    @Option(
        name: .customLong("revoke-client-cert"),
        help: ArgumentHelp("Refuse the client certificate of this serial number (hex, as the attempts log names it), as a revoked one; repeatable.", valueName: "serial")
    )
    var revokeClientCert: [String] = []

    @Flag(name: .customLong("keep-certs"), help: "Reuse the CA, certificate and key already in the cert dir, and the client CA (a restarted simulator keeps its clients' trust).")
    var keepCerts = false

    @Option(
        name: .customLong("app"),
        help: ArgumentHelp(
            "Another app, repeatable: topic=BUNDLE,key-id=K,team-id=T,public-key=PEM (token auth; the same topic again adds a key) or topic=BUNDLE,certificate (client certificate auth).",
            valueName: "spec"
        )
    )
    var app: [String] = []

    @Option(
        name: .customLong("issue-client-cert"),
        help: ArgumentHelp(
            "Issue a client certificate for this topic into the cert dir (client-TOPIC.pem, -key.pem, .p12, .p12.password; a topic given again: client-TOPIC-2…); repeatable. Needs openssl for the .p12.",
            valueName: "topic"
        )
    )
    var issueClientCert: [String] = []

    func validate() throws {
        for (name, rate) in [("--fail-429", fail429), ("--fail-500", fail500), ("--fail-503", fail503)]
        where !(0...1).contains(rate) {
            throw ValidationError("\(name) must be between 0 and 1")
        }
        guard fail429 + fail500 + fail503 <= 1 else { throw ValidationError("the fault rates add up to more than 1") }
        if publicKey == nil, !generateKey, app.isEmpty {
            throw ValidationError("give --public-key PEM, --generate-key or --app")
        }
        for spec in app { _ = try Self.parseApp(spec) }
        for topic in issueClientCert where topic.isEmpty || topic.contains("/") {
            throw ValidationError("--issue-client-cert: \(topic) is not a topic")
        }
        if publicKey != nil, generateKey { throw ValidationError("--public-key and --generate-key exclude each other") }
        if let goAwayAfter, goAwayAfter < 1 { throw ValidationError("--goaway-after must be at least 1") }
        if latencyMS < 0 { throw ValidationError("--latency-ms must not be negative") }
    }

    func run() async throws {
        var logger = Logger(label: "herald.apns-sim")
        logger.logLevel = .info
        try FileManager.default.createDirectory(atPath: certDir, withIntermediateDirectories: true)

        // The team of --key-id/--team-id: present with --public-key or --generate-key.
        var verifyingKey: P256.Signing.PublicKey?
        var keyPath: String?
        if let publicKey {
            verifyingKey = try Self.readPublicKey(publicKey)
        } else if generateKey {
            let key = P256.Signing.PrivateKey()
            let path = (certDir as NSString).appendingPathComponent("AuthKey_\(keyID).p8")
            guard
                FileManager.default.createFile(
                    atPath: path,
                    contents: Data(key.pemRepresentation.utf8),
                    attributes: [.posixPermissions: 0o600]
                )
            else {
                throw ValidationError("cannot write \(path)")
            }
            verifyingKey = key.publicKey
            keyPath = path
        }

        let topics = verifyingKey == nil ? topic : (topic.isEmpty ? ["com.example.herald"] : topic)
        let apps = try app.map(Self.parseApp)
        var tls = SimulatorConfiguration.TLS.generate(directory: certDir)
        let dir = certDir as NSString
        let kept = ["server.pem", "server-key.pem", "ca.pem"].map { dir.appendingPathComponent($0) }
        if keepCerts, kept.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) {
            tls = .files(certificateChainPath: kept[0], privateKeyPath: kept[1], caPath: kept[2])
        }
        var configuration = SimulatorConfiguration(
            host: host,
            port: port,
            tls: tls,
            teamID: teamID,
            signingKeys: verifyingKey.map { [keyID: $0] } ?? [:],
            allowedTopics: verifyingKey == nil ? [] : Set(topics),
            unregisteredTokens: try unregistered.map(Self.readUnregistered) ?? [:],
            faults: .init(
                rate429: fail429,
                rate500: fail500,
                rate503: fail503,
                seed: seed,
                goAwayAfterStreams: goAwayAfter,
                latency: .milliseconds(latencyMS)
            ),
            maxConcurrentStreams: maxStreams,
            startWithOneStream: true,
            acceptedLogPath: log,
            recordAccepted: false,
            apps: apps
        )
        configuration.channelsPort = channelsPort ?? (port == 0 ? 0 : port + 1)
        configuration.channelIDBytes = channelIDBytes
        configuration.attemptsLogPath = attemptsLog
        configuration.revokedCertificateSerials = Set(revokeClientCert)
        let simulator = try APNsSimulator(configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger)
        // Bound before the service group runs, so the settings below carry the port.
        let boundPort = try await simulator.start()
        let shownHost = host.contains(":") ? "[\(host)]" : host
        var lines = [
            "APNS_URL=https://\(shownHost):\(boundPort)",
            "APNS_CA_PATH=\(simulator.caCertificatePath ?? "")",
            "APNS_CHANNELS_URL=https://\(shownHost):\(simulator.channelsPort ?? 0)",
        ]
        if verifyingKey != nil {
            lines += ["APNS_KEY_ID=\(keyID)", "APNS_TEAM_ID=\(teamID)"]
        }
        if let first = verifyingKey != nil ? topics.first : apps.first?.topic { lines.append("APNS_TOPIC=\(first)") }
        if let keyPath { lines.append("APNS_KEY_PATH=\(keyPath)") }
        // Shell assignments like the lines above (scripts source them): per issued certificate N,
        // its topic and where each of its files was written.
        lines.append("APNS_CLIENT_CA_PATH=\(simulator.clientCACertificatePath)")
        for (index, topic) in issueClientCert.enumerated() {
            // A topic given again gets a certificate of its own (a rotation's new one): client-TOPIC-2, -3.
            let repeats = issueClientCert[..<index].filter { $0 == topic }.count
            let issued = try simulator.issueClientCertificate(
                topics: [topic],
                directory: certDir,
                name: repeats == 0 ? "client-\(topic)" : "client-\(topic)-\(repeats + 1)",
                password: Self.randomPassword()
            )
            let n = index + 1
            lines += [
                "APNS_CLIENT_TOPIC_\(n)=\(topic)",
                "APNS_CLIENT_SERIAL_\(n)=\(issued.serialNumber)",
                "APNS_CLIENT_CERT_PATH_\(n)=\(issued.certificatePath)",
                "APNS_CLIENT_KEY_PATH_\(n)=\(issued.privateKeyPath)",
                "APNS_CLIENT_P12_PATH_\(n)=\(issued.p12Path)",
                "APNS_CLIENT_P12_PASSWORD_FILE_\(n)=\(issued.passwordFilePath)",
            ]
        }
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))

        // SIGTERM or SIGINT: the simulator stops listening, closes its connections and flushes its log.
        let services = ServiceGroup(
            configuration: .init(services: [simulator], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        )
        try await services.run()
        let stats = await simulator.stats
        logger.info(
            "apns simulator stopped",
            metadata: [
                "requests": "\(stats.requests)", "accepted": "\(stats.accepted)",
                "connections": "\(stats.connections)", "broadcasts": "\(stats.broadcasts)",
                "channels_created": "\(stats.channelsCreated)", "channels_deleted": "\(stats.channelsDeleted)",
            ]
        )
    }

    static func readPublicKey(_ path: String) throws -> P256.Signing.PublicKey {
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8),
            let key = try? P256.Signing.PublicKey(pemRepresentation: pem)
        else {
            throw ValidationError("\(path) is not a P-256 public key in PEM")
        }
        return key
    }

    /// `topic=BUNDLE,key-id=K,team-id=T,public-key=PEM` or `topic=BUNDLE,certificate`.
    static func parseApp(_ spec: String) throws -> SimulatedApp {
        var fields: [String: String] = [:]
        for part in spec.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard let name = pair.first, !name.isEmpty, fields[name] == nil else {
                throw ValidationError("--app \(spec): empty or repeated field")
            }
            fields[name] = pair.count == 2 ? pair[1] : ""
        }
        guard let topic = fields.removeValue(forKey: "topic"), !topic.isEmpty else {
            throw ValidationError("--app \(spec): topic= is missing")
        }
        if fields.removeValue(forKey: "certificate") != nil {
            guard fields.isEmpty else { throw ValidationError("--app \(spec): a certificate app takes no key fields") }
            return SimulatedApp(topic: topic, auth: .certificate)
        }
        guard let keyID = fields["key-id"], !keyID.isEmpty, let teamID = fields["team-id"], !teamID.isEmpty,
            let keyPath = fields["public-key"], !keyPath.isEmpty, fields.count == 3
        else {
            throw ValidationError("--app \(spec): give key-id=, team-id= and public-key=, or certificate")
        }
        return SimulatedApp(topic: topic, auth: .token(teamID: teamID, keys: [keyID: try readPublicKey(keyPath)]))
    }

    static func randomPassword() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Reads `token [epoch-seconds]` lines; `#` starts a comment.
    static func readUnregistered(_ path: String) throws -> [String: Date] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ValidationError("cannot read \(path)")
        }
        var tokens: [String: Date] = [:]
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = content.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\t" })
            guard let token = fields.first else { continue }
            var date = Date()
            if fields.count > 1 {
                guard let seconds = Double(fields[1]) else {
                    throw ValidationError("\(path):\(number + 1): bad timestamp")
                }
                date = Date(timeIntervalSince1970: seconds)
            }
            tokens[token.lowercased()] = date
        }
        return tokens
    }
}
