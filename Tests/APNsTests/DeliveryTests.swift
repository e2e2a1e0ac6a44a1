import APNs
import APNsSimulator
import Foundation
import Logging
import Testing
import TestSupport

@Suite("Delivery against the simulator")
struct DeliveryTests {
    @Test("2,000 notifications at 100 in flight arrive exactly once with their headers and payload")
    func acceptedExactlyOnce() async throws {
        let running = try await APNsSimulatorHarness.start()
        let notifications = (0..<2000).map { notification($0) }
        let results = try await withClient(running) { client in
            await sendAll(client, notifications, concurrency: 100)
        }
        #expect(results.count == 2000)
        for (sent, result) in zip(notifications, results) {
            #expect(result.outcome == .sent(apnsID: sent.apnsID))
        }
        let accepted = await running.simulator.accepted
        #expect(accepted.count == 2000)
        let byID = Dictionary(grouping: accepted, by: \.apnsID)
        #expect(byID.count == 2000)
        for sent in notifications {
            let id = sent.apnsID.uuidString.lowercased()
            guard let copies = byID[id], let got = copies.first else {
                Issue.record("notification \(id) not accepted")
                continue
            }
            #expect(copies.count == 1)
            #expect(got.deviceToken == sent.deviceToken)
            #expect(got.payload == sent.payload)
            #expect(got.headers[":method"] == "POST")
            #expect(got.headers[":path"] == "/3/device/\(sent.deviceToken)")
            #expect(got.headers["apns-topic"] == APNsSimulatorHarness.defaultTopic)
            #expect(got.headers["apns-push-type"] == "alert")
            #expect(got.headers["apns-priority"] == "10")
            #expect(got.headers["apns-expiration"] == "1900000000")
            #expect(got.headers["apns-collapse-id"] == "campaign-42")
            #expect(got.headers["apns-id"] == id)
            #expect(got.headers["content-length"] == String(sent.payload.count))
            #expect(got.headers["authorization"]?.hasPrefix("bearer ") == true)
        }
    }

    @Test("410 Unregistered, BadDeviceToken and DeviceTokenNotForTopic mark the device invalid")
    func invalidDevices() async throws {
        let gone = APNsSimulatorHarness.randomDeviceToken()
        let foreign = APNsSimulatorHarness.randomDeviceToken()
        let goneSince = Date(timeIntervalSince1970: 1_763_000_000.123)
        let running = try await APNsSimulatorHarness.start { configuration in
            configuration.unregisteredTokens = [gone: goneSince]
            configuration.tokensOfOtherTopics = [foreign]
        }
        let results = try await withClient(running) { client in
            [
                await client.send(notification(1, token: gone)),
                await client.send(notification(2, token: "abcd")),  // too short: the server says BadDeviceToken
                await client.send(notification(3, token: "not-hex!")),  // refused before sending
                await client.send(notification(4, token: foreign)),
                await client.send(notification(5)),
            ]
        }
        guard case .deviceInvalid(.unregistered, let timestamp?) = results[0].outcome else {
            Issue.record("expected 410 Unregistered with a timestamp, got \(results[0].outcome)")
            return
        }
        #expect(abs(timestamp.timeIntervalSince1970 - goneSince.timeIntervalSince1970) < 0.002)
        #expect(results[1].outcome == .deviceInvalid(reason: .badDeviceToken, timestamp: nil))
        #expect(results[1].attempts == 1)
        #expect(results[2].outcome == .deviceInvalid(reason: .badDeviceToken, timestamp: nil))
        #expect(results[2].attempts == 0)
        #expect(results[3].outcome == .deviceInvalid(reason: .deviceTokenNotForTopic, timestamp: nil))
        #expect(results[4].outcome.isSent)
        #expect(await running.simulator.accepted.count == 1)
    }

    @Test("503/429 storms and GOAWAY every 150 streams still deliver everything once")
    func faultStorm() async throws {
        let running = try await APNsSimulatorHarness.start { configuration in
            configuration.faults = .init(rate429: 0.15, rate500: 0.05, rate503: 0.15, seed: 7, goAwayAfterStreams: 150)
        }
        let notifications = (0..<1500).map { notification($0) }
        let results = try await withClient(
            running,
            configure: { $0.retry = RetryPolicy(maxAttempts: 20, baseDelay: .milliseconds(1), maxDelay: .milliseconds(20)) }
        ) { client in
            await sendAll(client, notifications, concurrency: 100)
        }
        let failed = results.filter { !$0.outcome.isSent }
        #expect(failed.isEmpty, "not sent: \(failed.prefix(5))")
        #expect(results.contains { $0.retried > 0 })
        let accepted = await running.simulator.accepted
        #expect(accepted.count == 1500)
        #expect(Set(accepted.map(\.apnsID)).count == 1500)
        let stats = await running.simulator.stats
        #expect(stats.goAwaysSent >= 5)
        #expect(stats.connections >= 5)
    }

    @Test("the client uses one stream until the server raises its limit, then no more than the limit")
    func respectsMaxConcurrentStreams() async throws {
        let running = try await APNsSimulatorHarness.start { configuration in
            configuration.startWithOneStream = true
            configuration.maxConcurrentStreams = 8
        }
        let notifications = (0..<300).map { notification($0) }
        let results = try await withClient(running, configure: { $0.maxConnections = 1 }) { client in
            await sendAll(client, notifications, concurrency: 50)
        }
        #expect(results.allSatisfy { $0.outcome.isSent })
        let stats = await running.simulator.stats
        #expect(stats.connections == 1)
        #expect(stats.peakStreamsWhileLimitedToOne == 1)
        #expect(stats.peakStreams <= 8)
        #expect(stats.peakStreams > 1)
        #expect(stats.rejected.isEmpty)
    }

    @Test("a payload over 4096 bytes fails without being sent")
    func payloadTooLarge() async throws {
        let running = try await APNsSimulatorHarness.start()
        var big = notification(1)
        big.payload = Array("{\"aps\":{\"alert\":\"\(String(repeating: "x", count: 4100))\"}}".utf8)
        let tooBig = big
        let result = try await withClient(running) { client in await client.send(tooBig) }
        #expect(result.outcome == .failed(status: nil, reason: .payloadTooLarge))
        #expect(result.attempts == 0)
        #expect(await running.simulator.stats.requests == 0)
    }
}
