import Foundation
import HeraldCore
import Testing

@Suite("Segment rules")
struct SegmentTests {
    func rule(_ json: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))
    }

    @Test func emptyRuleIsEveryone() throws {
        let c = try SegmentCompiler().compile(try rule("{}"))
        #expect(c.sql == "TRUE")
        #expect(c.binds.isEmpty)
    }

    @Test func valuesBecomeBindsNeverSQL() throws {
        let evil = "en'; DROP TABLE users; --"
        let c = try SegmentCompiler(firstPlaceholder: 5).compile(.object([
            "all": .array([
                .object(["attr": .string("locale"), "op": .string("="), "value": .string(evil)]),
                .object(["attr": .string("attributes.tier'--"), "op": .string("in"), "value": .array([.string("gold")])]),
            ]),
        ]))
        #expect(!c.sql.contains("DROP"))
        #expect(!c.sql.contains("tier"))
        #expect(c.sql.contains("$5") && c.sql.contains("$6") && c.sql.contains("$7"))
        #expect(c.binds.first == .text(evil))
        #expect(c.binds.contains(.text("tier'--")))
    }

    @Test(arguments: [
        (#"{"all": [{"attr": "locale", "op": "~", "value": "en"}]}"#, "rule.all[0].op", "operator \"~\""),
        (#"{"any": []}"#, "rule.any", "non-empty array"),
        (#"{"all": [{"attr": "shoe_size", "op": "=", "value": 3}]}"#, "rule.all[0].attr", "unknown attribute \"shoe_size\""),
        (#"{"all": [{"attr": "app_version", "op": ">=", "value": "two"}]}"#, "rule.all[0].value", "not a version"),
        (#"{"all": [{"attr": "last_seen", "op": "within", "value": "a while"}]}"#, "rule.all[0].value", "not a duration"),
        (#"{"not": {"attr": "locale", "op": "in", "value": "en"}}"#, "rule.not.value", "array of strings"),
        (#"{"attr": "locale", "op": "=", "value": "en", "extra": 1}"#, "rule", "unknown key \"extra\""),
        (#"[1]"#, "rule", "expected an object"),
        (#"{"all": [{"attr": "attributes.orders", "op": ">", "value": "ten"}]}"#, "rule.all[0].value", "expected a number"),
    ])
    func badRulesNameTheBadPart(json: String, path: String, words: String) throws {
        let parsed = try rule(json)
        do throws(SegmentRuleError) {
            _ = try SegmentCompiler().compile(parsed)
            Issue.record("rule \(json) compiled")
        } catch {
            #expect(error.path == path)
            #expect(error.description.contains(words), "\(error.description)")
        }
    }

    @Test func depthAndSizeAreBounded() throws {
        var deep: JSONValue = .object(["attr": .string("locale"), "op": .string("="), "value": .string("en")])
        for _ in 0..<20 { deep = .object(["not": deep]) }
        #expect(throws: SegmentRuleError.self) { try SegmentCompiler().compile(deep) }
        let many = JSONValue.object(["any": .array(Array(repeating: .object([
            "attr": .string("locale"), "op": .string("="), "value": .string("en")]), count: 101))])
        #expect(throws: SegmentRuleError.self) { try SegmentCompiler().compile(many) }
    }
}
