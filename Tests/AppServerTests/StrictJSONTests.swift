import AppServer
import Foundation
import HeraldCore
import NIOCore
import Testing

@Suite("Strict JSON")
struct StrictJSONTests {
    func refusal(_ text: String) -> String? {
        do {
            _ = try StrictJSON.parse(Array(text.utf8))
            return nil
        } catch {
            return error.message
        }
    }

    @Test func readsWhatRFC8259Allows() throws {
        let value = try StrictJSON.parse(Array(#" {"a": [1, -2.5e3, true, false, null, "é\u00e9\ud83d\ude00\n"], "b": {}} "#.utf8))
        #expect(value["a"] == .array([.int(1), .double(-2500), .bool(true), .bool(false), .null, .string("éé😀\n")]))
        #expect(value["b"] == .object([:]))
        #expect(try StrictJSON.parse(Array("9223372036854775807".utf8)) == .int(Int64.max))
    }

    @Test func refusesWhatLaxParsersForgive() {
        #expect(refusal(#"{"a":1,"a":2}"#)?.contains("duplicate key \"a\"") == true)
        #expect(refusal(#"{"a":1,}"#)?.contains("trailing comma") == true)
        #expect(refusal("[1,]")?.contains("trailing comma") == true)
        #expect(refusal("\u{FEFF}{}")?.contains("byte order mark") == true)
        #expect(refusal("{\"a\":\"x\u{1}\"}")?.contains("control character") == true)
        #expect(refusal(#"{"a":"\ud800"}"#)?.contains("surrogate") == true)
        #expect(refusal("1e400")?.contains("out of range") == true)
        #expect(refusal("9223372036854775808")?.contains("out of range") == true)
        #expect(refusal("01") != nil)
        #expect(refusal("NaN") != nil)
        #expect(refusal("{} {}")?.contains("after the JSON value") == true)
        #expect(refusal(String(repeating: "[", count: 17) + String(repeating: "]", count: 17))?.contains("nest deeper") == true)
        #expect(refusal("") == "the body is empty")
        let invalid: [UInt8] = Array("\"a".utf8) + [0xC0, 0xAF] + Array("\"".utf8)
        #expect(throws: StrictJSON.Error.self) { try StrictJSON.parse(invalid) }
    }

    @Test func textLengthIsCountedInCodePoints() {
        let text = "e" + String(repeating: "\u{0301}", count: 2000)
        #expect(text.count == 1)
        #expect(text.unicodeScalars.count == 2001)
        let body = #"{"delivery":1,"token":"t","action":"a","occurred_at":"2026-11-20T10:00:00Z","reply_id":"6F1B5C2E-8C1D-4E0A-9B77-2A9C1F3D4E5F","text":"\#(text)"}"#
        let reply = try? ReplyRules.decode(Array(body.utf8))
        #expect(reply?.text.flatMap(ReplyRules.textProblem) == .textTooLong)
    }
}

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
