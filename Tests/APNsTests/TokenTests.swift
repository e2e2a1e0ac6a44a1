import APNs
import APNsSimulator
import Crypto
import Foundation
import NIOConcurrencyHelpers
import Testing
import TestSupport

@Suite("Provider tokens")
struct TokenTests {
    @Test("an expired provider token is renewed and the request retried once")
    func expiredTokenRenewed() async throws {
        let running = try await APNsSimulatorHarness.start()
        let calls = NIOLockedValueBox(0)
        let results = try await withClient(
            running,
            configure: { configuration in
                // The first token is stamped two hours ago: the simulator calls it expired.
                configuration.tokenClock = {
                    let call = calls.withLockedValue { value -> Int in
                        value += 1
                        return value
                    }
                    return call == 1 ? Date().addingTimeInterval(-7200) : Date()
                }
            }
        ) { client in
            [await client.send(notification(1)), await client.send(notification(2))]
        }
        #expect(results[0].outcome.isSent)
        #expect(results[0].attempts == 2)
        #expect(results[1].outcome.isSent)
        #expect(results[1].attempts == 1)
        #expect(calls.withLockedValue { $0 } == 2)
        let stats = await running.simulator.stats
        #expect(stats.rejected["ExpiredProviderToken"] == 1)
        #expect(stats.rejected["TooManyProviderTokenUpdates"] == nil)
    }

    @Test("a wrong signing key gives 403 InvalidProviderToken, fatal for the run")
    func wrongKey() async throws {
        let running = try await APNsSimulatorHarness.start()
        let results = try await withClient(
            running,
            configure: { $0.signingKey = APNsSigningKey(privateKey: P256.Signing.PrivateKey()) }
        ) { client in
            await sendAll(client, (0..<20).map { notification($0) }, concurrency: 10)
        }
        for result in results {
            #expect(result.outcome == .failed(status: 403, reason: .invalidProviderToken))
            #expect(result.attempts == 1)
        }
        #expect(APNsReason.invalidProviderToken.isFatalForRun)
        #expect(await running.simulator.accepted.isEmpty)
    }

    @Test("the provider token is ES256 with kid, iss and a whole-second iat")
    func tokenShape() async throws {
        let running = try await APNsSimulatorHarness.start()
        let result = try await withClient(running) { client in await client.send(notification(1)) }
        #expect(result.outcome.isSent)
        let accepted = await running.simulator.accepted
        let authorization = try #require(accepted.first?.headers["authorization"])
        let jwt = authorization.dropFirst("bearer ".count)
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        #expect(parts.count == 3)
        func decode(_ text: String) throws -> Data {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return try #require(Data(base64Encoded: base64))
        }
        let header = try #require(try JSONSerialization.jsonObject(with: decode(parts[0])) as? [String: Any])
        let claims = try #require(try JSONSerialization.jsonObject(with: decode(parts[1])) as? [String: Any])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == running.keyID)
        #expect(claims["iss"] as? String == running.teamID)
        let iat = try #require(claims["iat"] as? Int)
        #expect(abs(Double(iat) - Date().timeIntervalSince1970) < 120)
        #expect(try decode(parts[2]).count == 64)
        #expect(!parts[1].contains("."))
    }
}
