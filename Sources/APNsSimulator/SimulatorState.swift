import APNs
import Crypto
import Foundation
import HeraldCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Lifecycle
import ServiceLifecycle

/// Everything shared by the connections. Lives on the simulator's event loop.
final class SimulatorState {
    let configuration: SimulatorConfiguration
    let logger: Logger
    var random: SplitMix64
    var stats = SimulatorStats()
    var accepted: [AcceptedNotification] = []
    var unregistered: [String: Date]
    var auth: AuthRegistry
    var nextConnection = 0
    /// Device tokens whose answers wait for `releaseHeld()`, and the answers waiting.
    var heldTokens: Set<String> = []
    var heldAnswers: [() -> Void] = []
    var channels = ChannelRegistry()
    private var logHandle: FileHandle?
    private var logBuffer: [UInt8] = []
    private var attemptsHandle: FileHandle?
    private var attemptsBuffer: [UInt8] = []
    private var flushTimer: RepeatedTask?
    private(set) var connections: [ObjectIdentifier: Channel] = [:]
    /// Completed when the last connection closes during a graceful stop.
    private var drained: [EventLoopPromise<Void>] = []

    init(configuration: SimulatorConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.random = SplitMix64(seed: configuration.faults.seed)
        self.auth = AuthRegistry(configuration)
        self.unregistered = Dictionary(
            configuration.unregisteredTokens.map { ($0.key.lowercased(), $0.value) },
            uniquingKeysWith: { first, _ in first }
        )
        logHandle = try configuration.acceptedLogPath.map(Self.appending)
        attemptsHandle = try configuration.attemptsLogPath.map(Self.appending)
    }

    /// A log file opened at its end (made when missing).
    private static func appending(_ path: String) throws -> FileHandle {
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil)
        }
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw SimulatorError.cannotOpenLog(path)
        }
        handle.seekToEndOfFile()
        return handle
    }

    func startTimers() {
        guard logHandle != nil || attemptsHandle != nil, flushTimer == nil, let loop = MultiThreadedEventLoopGroup.currentEventLoop else { return }
        let bound = NIOLoopBound(self, eventLoop: loop)
        flushTimer = loop.scheduleRepeatedTask(initialDelay: .milliseconds(200), delay: .milliseconds(200)) { _ in
            bound.value.flushLog()
        }
    }

    func register(_ channel: Channel) -> Int {
        nextConnection += 1
        stats.connections += 1
        connections[ObjectIdentifier(channel)] = channel
        return nextConnection
    }

    func unregister(_ channel: Channel) {
        connections.removeValue(forKey: ObjectIdentifier(channel))
        if connections.isEmpty, !drained.isEmpty {
            let waiting = drained
            drained.removeAll()
            for promise in waiting { promise.succeed() }
        }
    }

    /// Graceful stop: GOAWAY on every connection (no new streams; those open are answered). The
    /// future completes once the clients have closed them all.
    func releaseHeld() {
        heldTokens = []
        let answers = heldAnswers
        heldAnswers = []
        for answer in answers { answer() }
    }

    func drain(on eventLoop: EventLoop) -> EventLoopFuture<Void> {
        releaseHeld()
        guard !connections.isEmpty else { return eventLoop.makeSucceededVoidFuture() }
        for channel in connections.values {
            let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .noError, opaqueData: nil))
            channel.writeAndFlush(goAway, promise: nil)
        }
        let promise = eventLoop.makePromise(of: Void.self)
        drained.append(promise)
        return promise.futureResult
    }

    func reject(_ reason: String) {
        stats.rejected[reason, default: 0] += 1
    }

    func record(_ notification: AcceptedNotification, topic: String) {
        stats.accepted += 1
        if logHandle != nil {
            var line = "{\"at\":\(Int64(Date().timeIntervalSince1970 * 1000)),\"token\":\"\(notification.deviceToken)\""
            line += ",\"apns_id\":\"\(notification.apnsID)\",\"topic\":\(jsonString(topic))"
            if let channel = notification.channel { line += ",\"channel\":\(jsonString(channel))" }
            for name in ["apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id"] {
                if let value = notification.headers[name] { line += ",\(jsonString(name)):\(jsonString(value))" }
            }
            line += ",\"payload\":"
            logBuffer.append(contentsOf: line.utf8)
            logBuffer.append(contentsOf: notification.payload)
            logBuffer.append(contentsOf: "}\n".utf8)
            if logBuffer.count > 1 << 16 { flushLog() }
        }
        if configuration.recordAccepted { accepted.append(notification) }
    }

    /// One attempt at a device, the status it was answered and what authenticated it (`attemptsLogPath`).
    func recordAttempt(token: String, status: Int, collapseID: String?, credential: String?) {
        guard attemptsHandle != nil else { return }
        var line = "{\"at\":\(Int64(Date().timeIntervalSince1970 * 1000)),\"token\":\"\(token)\",\"status\":\(status)"
        if let collapseID { line += ",\"apns-collapse-id\":\(jsonString(collapseID))" }
        if let credential { line += ",\"credential\":\(jsonString(credential))" }
        attemptsBuffer.append(contentsOf: (line + "}\n").utf8)
        if attemptsBuffer.count > 1 << 16 { flushLog() }
    }

    func flushLog() {
        if let handle = logHandle, !logBuffer.isEmpty {
            handle.write(Data(logBuffer))
            logBuffer.removeAll(keepingCapacity: true)
        }
        if let handle = attemptsHandle, !attemptsBuffer.isEmpty {
            handle.write(Data(attemptsBuffer))
            attemptsBuffer.removeAll(keepingCapacity: true)
        }
    }

    func shutdown() {
        flushTimer?.cancel()
        flushTimer = nil
        flushLog()
        try? logHandle?.close()
        logHandle = nil
        try? attemptsHandle?.close()
        attemptsHandle = nil
        for channel in connections.values { channel.close(promise: nil) }
        connections.removeAll()
        for promise in drained { promise.succeed() }
        drained.removeAll()
    }

    private func jsonString(_ value: String) -> String {
        "\"" + ProviderTokenSigner.jsonEscaped(value) + "\""
    }
}
