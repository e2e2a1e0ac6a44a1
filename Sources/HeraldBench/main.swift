// herald-bench: sends N notifications with the real APNsClient to a URL with C in flight and
// prints notifications/s, client CPU µs per notification (getrusage) and peak RSS.
//
//   herald-bench --url https://127.0.0.1:8443 --ca ca.pem -n 200000 -c 100 [--payload-bytes 300]
//                [--connections 1] [--streams 100] [--key AuthKey.p8 --key-id K --team-id T --topic T]
//                [--transport herald|nio-http2]
//   --transport nio-http2: the same load through a client on swift-nio-http2's NIOHTTP2Handler
//                (NIOHTTP2Transport.swift) instead of the project's APNsClient, for the A/B.
//   herald-bench --simulator -n 50000 -c 100     (an in-process APNs simulator on 127.0.0.1 as the target)
//   herald-bench seal [-n 100000]                (HPKE seals per second per core, SealBench.swift)
//   herald-bench render [-n 1000000]             (a payload's CPU per device with and without templates, RenderBench.swift)
//   herald-bench replies …                       (reply bodies for the intake's benchmark: RepliesCommand.swift)
//   herald-bench bare-intake --port P            (the intake's baseline: Hummingbird alone, BareIntake.swift)
import APNs
import APNsSimulator
import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
import HeraldCore
#endif

if CommandLine.arguments.dropFirst().first == "replies" {
    exit(RepliesCommand.run(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.dropFirst().first == "bare-intake" {
    exit(await BareIntakeCommand.run(Array(CommandLine.arguments.dropFirst(2))))
}

struct Options {
    var url = "https://127.0.0.1:8443"
    var caPath: String?
    var count = 200_000
    var concurrency = 100
    var payloadBytes = 300
    var connections = 1
    var streams = 100
    var keyPath: String?
    var keyID = "BENCHKEY01"
    var teamID = "BENCHTEAM1"
    var topic = "com.example.herald"
    var label = "herald"
    /// "loop": sending tasks prefer the client's event loop as executor; "pool": the default executor.
    var executor = "loop"
    /// Start an in-process simulator and send to it.
    var simulator = false
    /// "herald": the project's APNsClient; "nio-http2": the NIOHTTP2Handler client.
    var transport = "herald"

    static func parse(_ arguments: [String]) -> Options? {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "--simulator" {
                options.simulator = true
                continue
            }
            guard let value = iterator.next() else { return nil }
            switch argument {
            case "--url": options.url = value
            case "--ca": options.caPath = value
            case "-n": guard let v = Int(value), v > 0 else { return nil }; options.count = v
            case "-c": guard let v = Int(value), v > 0 else { return nil }; options.concurrency = v
            case "--payload-bytes": guard let v = Int(value), v > 20, v <= 4096 else { return nil }; options.payloadBytes = v
            case "--connections": guard let v = Int(value), v > 0 else { return nil }; options.connections = v
            case "--streams": guard let v = Int(value), v > 0 else { return nil }; options.streams = v
            case "--key": options.keyPath = value
            case "--key-id": options.keyID = value
            case "--team-id": options.teamID = value
            case "--topic": options.topic = value
            case "--label": options.label = value
            case "--executor": guard value == "loop" || value == "pool" else { return nil }; options.executor = value
            case "--transport": guard value == "herald" || value == "nio-http2" else { return nil }; options.transport = value
            default: return nil
            }
        }
        return options
    }
}

func cpuMicroseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let user = Double(usage.ru_utime.tv_sec) * 1e6 + Double(usage.ru_utime.tv_usec)
    let system = Double(usage.ru_stime.tv_sec) * 1e6 + Double(usage.ru_stime.tv_usec)
    return user + system
}

func peakRSSKilobytes() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Int(usage.ru_maxrss)
}

func makePayload(bytes: Int) -> [UInt8] {
    let head = "{\"aps\":{\"alert\":{\"title\":\"Flash sale\",\"body\":\""
    let tail = "\"},\"sound\":\"default\"},\"herald\":{\"c\":42}}"
    let filler = max(0, bytes - head.utf8.count - tail.utf8.count)
    return Array((head + String(repeating: "x", count: filler) + tail).utf8)
}

if CommandLine.arguments.dropFirst().first == "render" {
    exit(RenderBench.run(Array(CommandLine.arguments.dropFirst(2))))
}
if CommandLine.arguments.dropFirst().first == "seal" {
    exit(SealBench.run(Array(CommandLine.arguments.dropFirst(2))))
}

guard let parsedOptions = Options.parse(Array(CommandLine.arguments.dropFirst())) else {
    FileHandle.standardError.write(Data("usage: herald-bench --url URL [--ca PEM] [-n N] [-c C] [--payload-bytes B] [--connections K] [--streams S] [--key P8 --key-id K --team-id T --topic T] [--simulator] [--transport herald|nio-http2] [--executor loop|pool]\n".utf8))
    exit(2)
}

var logger = Logger(label: "herald-bench")
logger.logLevel = .warning

// The client's connections (and the in-process simulator's) live on this group; the services
// never shut it down.
let eventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
var setup = parsedOptions
let signingKey: APNsSigningKey
let privateKey: P256.Signing.PrivateKey
if let keyPath = setup.keyPath {
    signingKey = try APNsSigningKey(pemPath: keyPath)
    privateKey = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: keyPath, encoding: .utf8))
} else {
    privateKey = P256.Signing.PrivateKey()
    signingKey = APNsSigningKey(privateKey: privateKey)
}
var simulator: APNsSimulator?
if setup.simulator {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString)").path
    let started = try APNsSimulator(
        configuration: SimulatorConfiguration(
            tls: .generate(directory: directory),
            teamID: setup.teamID,
            signingKeys: [setup.keyID: signingKey.publicKey],
            allowedTopics: [setup.topic],
            recordAccepted: false
        ),
        eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
        logger: logger
    )
    let port = try await started.start()
    setup.url = "https://127.0.0.1:\(port)"
    setup.caPath = started.caCertificatePath
    simulator = started
}
let options = setup
let configuration = APNsConfiguration(
    signingKey: signingKey,
    keyID: options.keyID,
    teamID: options.teamID,
    topic: options.topic,
    baseURLOverride: options.url,
    extraTrustedCAPath: options.caPath,
    maxConnections: options.connections,
    maxStreamsPerConnection: options.streams,
    requestTimeout: .seconds(30),
    retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5), maxDelay: .milliseconds(200))
)
// Only the transport measured is made (its TLS context and buffers count in the peak RSS).
let heraldClient: APNsClient? =
    options.transport == "herald" ? try APNsClient(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger) : nil
let h2Client: NIOH2APNsClient? =
    options.transport == "nio-http2"
    ? try NIOH2APNsClient(
        url: options.url,
        caPath: options.caPath,
        connections: options.connections,
        streamsPerConnection: options.streams,
        privateKey: privateKey,
        keyID: options.keyID,
        teamID: options.teamID,
        topic: options.topic,
        requestTimeout: .seconds(30),
        eventLoopGroup: eventLoopGroup
    ) : nil
let payload = makePayload(bytes: options.payloadBytes)
let tokens = (0..<1024).map { index in
    (0..<32).map { byte in String(format: "%02x", UInt8((index &* 31 &+ byte &* 7) & 0xff)) }.joined()
}

extension SplitMix64 {
    mutating func nextUUID() -> UUID {
        let a = next()
        let b = next()
        var bytes = (
            UInt8(truncatingIfNeeded: a), UInt8(truncatingIfNeeded: a >> 8), UInt8(truncatingIfNeeded: a >> 16),
            UInt8(truncatingIfNeeded: a >> 24), UInt8(truncatingIfNeeded: a >> 32), UInt8(truncatingIfNeeded: a >> 40),
            UInt8(truncatingIfNeeded: a >> 48), UInt8(truncatingIfNeeded: a >> 56), UInt8(truncatingIfNeeded: b),
            UInt8(truncatingIfNeeded: b >> 8), UInt8(truncatingIfNeeded: b >> 16), UInt8(truncatingIfNeeded: b >> 24),
            UInt8(truncatingIfNeeded: b >> 32), UInt8(truncatingIfNeeded: b >> 40), UInt8(truncatingIfNeeded: b >> 48),
            UInt8(truncatingIfNeeded: b >> 56)
        )
        bytes.6 = (bytes.6 & 0x0f) | 0x40
        bytes.8 = (bytes.8 & 0x3f) | 0x80
        return UUID(uuid: bytes)
    }
}

struct Tally: Sendable {
    var sent = 0
    var failed = 0
    var retried = 0
    var firstFailure: String?
}

let next = NIOLockedValueBox(0)
let tally = NIOLockedValueBox(Tally())

@Sendable func worker(client: APNsClient, options: Options, payload: [UInt8], tokens: [String]) async {
    var random = SplitMix64(seed: UInt64.random(in: 0...UInt64.max))
    var local = Tally()
    while true {
        let index = next.withLockedValue { value -> Int in
            defer { value += 1 }
            return value
        }
        guard index < options.count else { break }
        // The runner takes apns-ids from the ledger; here a cheap generator makes them.
        let notification = APNsNotification(
            deviceToken: tokens[index & 1023],
            priority: 10,
            expiration: 1_900_000_000,
            collapseID: "campaign-42",
            apnsID: random.nextUUID(),
            payload: payload
        )
        let result = await client.send(notification)
        local.retried += result.retried
        if case .sent = result.outcome {
            local.sent += 1
        } else {
            local.failed += 1
            if local.firstFailure == nil { local.firstFailure = "\(result.outcome)" }
        }
    }
    let finished = local
    tally.withLockedValue { total in
        total.sent += finished.sent
        total.failed += finished.failed
        total.retried += finished.retried
        if total.firstFailure == nil { total.firstFailure = finished.firstFailure }
    }
}

/// The same worker for the NIOHTTP2Handler client (the notification built the same way).
@Sendable func h2Worker(client: NIOH2APNsClient, options: Options, payload: [UInt8], tokens: [String]) async {
    var random = SplitMix64(seed: UInt64.random(in: 0...UInt64.max))
    var local = Tally()
    while true {
        let index = next.withLockedValue { value -> Int in
            defer { value += 1 }
            return value
        }
        guard index < options.count else { break }
        let notification = APNsNotification(
            deviceToken: tokens[index & 1023],
            priority: 10,
            expiration: 1_900_000_000,
            collapseID: "campaign-42",
            apnsID: random.nextUUID(),
            payload: payload
        )
        let result = await client.send(notification)
        local.retried += result.retried
        if result.status == 200 {
            local.sent += 1
        } else {
            local.failed += 1
            if local.firstFailure == nil { local.firstFailure = result.failure ?? "HTTP \(result.status ?? 0)" }
        }
    }
    let finished = local
    tally.withLockedValue { total in
        total.sent += finished.sent
        total.failed += finished.failed
        total.retried += finished.retried
        if total.firstFailure == nil { total.firstFailure = finished.firstFailure }
    }
}

// The client (and the simulator) run as services of one group; the load runs beside it, then
// shuts the group down gracefully. SIGTERM/SIGINT stop it the same way.
let services: [any Service] = (simulator.map { [$0] } ?? []) + (h2Client.map { [$0] } ?? [heraldClient!])
let serviceGroup = ServiceGroup(
    configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
)
try await withThrowingTaskGroup(of: Void.self) { group in
    group.addTask { try await serviceGroup.run() }
    // Warm-up: one connection set up and the token signed before the clock starts.
    if let h2Client {
        _ = await h2Client.send(APNsNotification(deviceToken: tokens[0], payload: payload))
    } else if let client = heraldClient {
        _ = await client.send(APNsNotification(deviceToken: tokens[0], payload: payload))
    }

    let cpuStart = cpuMicroseconds()
    let start = ContinuousClock.now
    await withTaskGroup(of: Void.self) { workers in
        for _ in 0..<options.concurrency {
            if let h2Client {
                workers.addTask {
                    if options.executor == "loop" {
                        await withTaskExecutorPreference(h2Client.taskExecutor) {
                            await h2Worker(client: h2Client, options: options, payload: payload, tokens: tokens)
                        }
                    } else {
                        await h2Worker(client: h2Client, options: options, payload: payload, tokens: tokens)
                    }
                }
                continue
            }
            let client = heraldClient!
            workers.addTask {
                if options.executor == "loop" {
                    await withTaskExecutorPreference(client.taskExecutor) {
                        await worker(client: client, options: options, payload: payload, tokens: tokens)
                    }
                } else {
                    await worker(client: client, options: options, payload: payload, tokens: tokens)
                }
            }
        }
    }
    let elapsed = ContinuousClock.now - start
    let cpu = cpuMicroseconds() - cpuStart
    let seconds = elapsed.inSeconds
    let total = tally.withLockedValue { $0 }
    let done = total.sent + total.failed
    print(
        String(
            format: "%@: n=%d c=%d sent=%d failed=%d retried=%d seconds=%.2f rps=%.0f cpu_us_per_notification=%.1f peak_rss_kb=%d transport=%@",
            options.label, options.count, options.concurrency, total.sent, total.failed, total.retried, seconds,
            Double(done) / seconds, cpu / Double(max(done, 1)), peakRSSKilobytes(), options.transport
        )
    )
    if let failure = total.firstFailure { print("first failure: \(failure)") }
    if let simulator {
        let stats = await simulator.stats
        print("simulator: requests=\(stats.requests) accepted=\(stats.accepted) connections=\(stats.connections)")
    }
    await serviceGroup.triggerGracefulShutdown()
    try await group.waitForAll()
}
if let directory = simulator?.caCertificatePath.map({ ($0 as NSString).deletingLastPathComponent }) {
    try? FileManager.default.removeItem(atPath: directory)
}
try await eventLoopGroup.shutdownGracefully()
