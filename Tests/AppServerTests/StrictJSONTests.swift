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
