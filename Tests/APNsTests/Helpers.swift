import APNs
import APNsSimulator
import Foundation
import Logging
import NIOPosix
import TestSupport

/// Runs `body` with a client that is running against the simulator, then shuts both down. The
/// client gets an event loop of its own, as a command gives it.
func withClient<T: Sendable>(
    _ running: RunningAPNsSimulator,
    stoppingTheSimulator: Bool = true,
    configure: (inout APNsConfiguration) -> Void = { _ in },
    _ body: @Sendable (APNsClient) async throws -> T
) async throws -> T {
    var configuration = running.clientConfiguration
    configure(&configuration)
    var logger = Logger(label: "apns-test")
    logger.logLevel = .warning
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { group.shutdownGracefully { _ in } }
    let client = try APNsClient(configuration: configuration, eventLoopGroup: group, logger: logger)
    do {
        let result = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
        if stoppingTheSimulator { await running.stop() }
        return result
    } catch {
        if stoppingTheSimulator { await running.stop() }
        throw error
    }
}

/// Sends all notifications with at most `concurrency` in flight; results in input order.
func sendAll(_ client: APNsClient, _ notifications: [APNsNotification], concurrency: Int) async -> [APNsResult] {
    await withTaskGroup(of: (Int, APNsResult).self) { group in
        var results = [APNsResult?](repeating: nil, count: notifications.count)
        var next = 0
        while next < min(concurrency, notifications.count) {
            let index = next
            group.addTask { (index, await client.send(notifications[index])) }
            next += 1
        }
        for await (index, result) in group {
            results[index] = result
            if next < notifications.count {
                let index = next
                group.addTask { (index, await client.send(notifications[index])) }
                next += 1
            }
        }
        return results.compactMap { $0 }
    }
}

func payload(_ index: Int) -> [UInt8] {
    Array("{\"aps\":{\"alert\":{\"title\":\"Sale\",\"body\":\"Item \(index)\"},\"sound\":\"default\"},\"herald\":{\"c\":42,\"d\":\(index)}}".utf8)
}

func notification(_ index: Int, token: String = APNsSimulatorHarness.randomDeviceToken()) -> APNsNotification {
    APNsNotification(
        deviceToken: token,
        environment: .production,
        priority: 10,
        expiration: 1_900_000_000,
        collapseID: "campaign-42",
        payload: payload(index)
    )
}

extension APNsOutcome {
    var isSent: Bool {
        if case .sent = self { return true }
        return false
    }
}
