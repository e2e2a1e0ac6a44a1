import Foundation
@testable import HeraldCore
import Testing

/// `PlainReply`, the reader of the plain reply bodies clients send, against
/// `StrictJSON`: whatever it accepts, the strict reader accepts too, with the
/// same fields; whatever it declines is left to the strict reader.
@Suite("Reply bodies: the plain reader agrees with the strict one")
struct PlainReplyTests {
    static let members: [(key: String, value: String)] = [
        ("delivery", "918273"),
        ("token", #""7mkohaG_9-mo-IB6JiBg1A""#),
        ("action", #""reserve""#),
        ("occurred_at", #""2026-11-20T10:00:00Z""#),
        ("reply_id", #""c6e94ebe-6a4c-404a-83d1-0cb0441a515c""#),
    ]

    static func body(_ members: [(key: String, value: String)], spaces: [String] = []) -> [UInt8] {
        var out = (spaces.first ?? "") + "{"
        for (i, m) in members.enumerated() {
            let s = spaces.isEmpty ? "" : spaces[(i + 1) % spaces.count]
            if i > 0 { out += s + "," }
            out += s + "\"\(m.key)\"" + s + ":" + s + m.value
        }
        return Array((out + (spaces.last ?? "") + "}" + (spaces.first ?? "")).utf8)
    }

    static func plain(_ bytes: [UInt8]) -> ReplyFields? {
        PlainReply.scan(bytes)
    }

    static func strict(_ bytes: [UInt8]) -> ReplyFields? {
        try? ReplyRules.strictFields(bytes)
    }

    @Test func theShapesClientsSendAreReadAsTheStrictReaderReadsThem() throws {
        let texts = [nil, "null", #""""#, #""Loved it! 100% (really) ~ {not json} [x]""#,
                     // Read by StrictJSON's string reader.
                     #""très bien 👍 — 谢谢""#, #""Tab\tseparated \\ and \" \/""#, #""\u00e9\ud83d\udc4d \u0000""#, "\"del \u{7F}\""]
        let spacings = [[], [" "], ["\n", " ", "\t"], ["\r\n  "]]
        var count = 0
        for text in texts {
            var members = Self.members
            if let text { members.append(("text", text)) }
            // Every rotation of the keys, with every spacing.
            for rotation in 0..<members.count {
                let order = Array(members[rotation...] + members[..<rotation])
                for spaces in spacings {
                    let bytes = Self.body(order, spaces: spaces)
                    let plain = try #require(Self.plain(bytes), "declined: \(String(decoding: bytes, as: UTF8.self))")
                    #expect(plain == Self.strict(bytes))
                    count += 1
                }
            }
        }
        for delivery in ["0", "7", "999999999999999999"] {
            var members = Self.members
            members[0].value = delivery
            let bytes = Self.body(members)
            #expect(Self.plain(bytes)?.delivery == Int64(delivery))
            #expect(Self.plain(bytes) == Self.strict(bytes))
        }
        #expect(count == 5 * 4 + 7 * 6 * 4)
    }

    /// What it declines, the strict reader reads or refuses: the decoded
    /// reply (or the error) is the strict reader's.
    @Test func whatItDeclinesIsLeftToTheStrictReader() throws {
        func with(_ key: String, _ value: String) -> [UInt8] {
            Self.body(Self.members.map { $0.key == key ? ($0.key, value) : $0 })
        }
        let declined: [[UInt8]] = [
            with("action", "\"re\tserve\""),                    // a raw control character
            with("action", #""re\ud800serve""#),                // half a surrogate pair
            with("action", #""re\xserve""#),                    // an unknown escape
            with("action", #""re\u00"#),                        // an escape cut short
            Array(#"{"acti\u006fn":"x"}"#.utf8),               // a key with an escape
            Array(#"{"delivery":1,"token":"t","action":"re"#.utf8) + [0xFF]       // not UTF-8
                + Array(#"","occurred_at":"x","reply_id":"y"}"#.utf8),
            with("delivery", "-1"), with("delivery", "1.0"), with("delivery", "1e3"), with("delivery", "01"),
            with("delivery", "1234567890123456789"),            // 19 digits
            with("delivery", "9999999999999999999"),            // 19 digits past Int64
            with("delivery", String(repeating: "9", count: 40)),
            with("delivery", #""918273""#),                     // a string
            with("action", "null"), with("action", "7"),
            Self.body(Self.members + [("text", "7")]),
            Self.body(Self.members + [("delivery", "1")]),      // a key twice
            Self.body(Self.members + [("extra", "1")]),         // an unknown key
            Self.body(Array(Self.members.dropLast())),          // a key missing
            Array(#"{"delivery":1,}"#.utf8),
            Self.body(Self.members) + Array("x".utf8),
            Array("\u{FEFF}".utf8) + Self.body(Self.members),
            Array("[]".utf8), Array("".utf8), Array("{".utf8),
        ]
        for bytes in declined {
            #expect(Self.plain(bytes) == nil, "\(String(decoding: bytes, as: UTF8.self))")
        }
        // Through decode: the same answer as the strict reader's own.
        let escaped = with("action", #""re\u0073erve""#)
        #expect(try ReplyRules.decode(escaped).action == "reserve")
        #expect(throws: ReplyError.malformed("\"delivery\" must be an integer")) { try ReplyRules.decode(with("delivery", "1.0")) }
    }

    /// Random edits of a plain body: whenever the plain reader still accepts
    /// one, the strict reader accepts it with the same fields.
    @Test func editedBodiesNeverSplitTheReaders() throws {
        var generator = Edits(seed: 0x4845_5241_4C44)
        let alphabet = Array(#"{}[]":,\ 0123456789-.eE"tnulrdx"#.utf8) + [0x09, 0x0A, 0x7F, 0xC3, 0xA9, 0x00]
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = Self.body(Self.members + (generator.next() % 2 == 0 ? [("text", #""hi""#)] : []))
            for _ in 0..<(1 + generator.next() % 3) {
                let at = Int(generator.next() % UInt64(bytes.count + 1))
                switch generator.next() % 3 {
                case 0 where at < bytes.count: bytes.remove(at: at)
                case 1 where at < bytes.count: bytes[at] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                default: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: at)
                }
            }
            if let plain = Self.plain(bytes) {
                accepted += 1
                #expect(Self.strict(bytes) == plain, "\(String(decoding: bytes, as: UTF8.self))")
            }
        }
        // Some edits keep a valid body (inside a string, whitespace).
        #expect(accepted > 100)
    }
}

/// A deterministic sequence (Knuth's MMIX LCG, high bits), so that a
/// failure repeats.
struct Edits {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }
}
