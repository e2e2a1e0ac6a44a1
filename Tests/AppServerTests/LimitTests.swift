import AppServer
import Foundation
import HeraldCore
import NIOCore
import Testing
import TestSupport

@Suite("Rate limits and client addresses")
struct LimitTests {
    @Test func aBurstIsAllowedThenRefusedWithRetryAfter() {
        let limiter = RateLimiter(.init(5, per: .seconds(86_400)))
        let decisions = (0..<8).map { _ in limiter.acquire("a") }
        #expect(decisions.prefix(5).allSatisfy { $0 == .allowed })
        for decision in decisions.suffix(3) {
            guard case .limited(let seconds) = decision else {
                Issue.record("allowed past the burst")
                continue
            }
            #expect((1...86_400 / 5).contains(seconds))
        }
        #expect(limiter.acquire("b") == .allowed)
    }

    @Test("a limited key's allowance comes back as time passes on the limiter's clock, and not before")
    func theAllowanceComesBackOnTheLimitersClock() {
        let clock = MockClock()
        let limiter = RateLimiter(.init(1, per: .seconds(60)), clock: clock)
        #expect(limiter.acquire("a") == .allowed)
        #expect(limiter.acquire("a") == .limited(retryAfter: 60))
        clock.advance(by: .seconds(59))
        #expect(limiter.acquire("a") == .limited(retryAfter: 1))
        clock.advance(by: .seconds(1))
        #expect(limiter.acquire("a") == .allowed)
    }

    @Test func theKeyTableStaysBounded() {
        let limiter = RateLimiter(.init(1, per: .seconds(3600)), maxKeys: 100)
        for i in 0..<10_000 { _ = limiter.acquire("k\(i)") }
        // No growth without bound: a fresh key is still served.
        #expect(limiter.acquire("fresh") == .allowed)
    }

    @Test func onlyATrustedProxysLastHopIsBelieved() throws {
        let proxy = try SocketAddress(ipAddress: "10.0.0.5", port: 4000)
        let phone = try SocketAddress(ipAddress: "203.0.113.9", port: 4000)
        let addresses = ClientAddress(trustedProxies: ["10.0.0.5", "10.0.0.6"])
        #expect(addresses.resolve(peer: phone, forwardedFor: ["1.2.3.4"]) == "203.0.113.9")
        #expect(addresses.resolve(peer: proxy, forwardedFor: ["1.2.3.4, 198.51.100.7"]) == "198.51.100.7")
        #expect(addresses.resolve(peer: proxy, forwardedFor: ["1.2.3.4", "198.51.100.7, 10.0.0.6"]) == "198.51.100.7")
        #expect(addresses.resolve(peer: proxy, forwardedFor: []) == "10.0.0.5")
        #expect(addresses.resolve(peer: proxy, forwardedFor: ["not-an-address"]) == "10.0.0.5")
        #expect(ClientAddress(trustedProxies: []).resolve(peer: proxy, forwardedFor: ["1.2.3.4"]) == "10.0.0.5")
        // Addresses are compared lowercased, an IPv4-mapped one as IPv4, whatever case they are written in.
        let v6 = try SocketAddress(ipAddress: "2001:db8::5", port: 4000)
        let mixed = ClientAddress(trustedProxies: ["2001:DB8::5"])
        #expect(mixed.resolve(peer: v6, forwardedFor: ["::FFFF:198.51.100.7"]) == "198.51.100.7")
        #expect(mixed.resolve(peer: v6, forwardedFor: ["2001:DB8::9"]) == "2001:db8::9")
    }
}
