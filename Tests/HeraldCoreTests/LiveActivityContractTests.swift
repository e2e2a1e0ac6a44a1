import Foundation
import ExtensionKit
import HeraldCore
import Testing

/// The contract between the payloads Herald sends and the types the app decodes them with.
@Suite("Live Activities: the app's types decode what Herald sends")
struct LiveActivityContractTests {
    @Test func everyStepsContentStateAndTheStartsAttributesDecodeWithTheDefaultDecoder() throws {
        let p = try LiveActivityTests.payload()
        for step in p.steps {
            let object = LiveActivityTests.object(p.payload(step, address: .startByToken, locale: "en", stockLeft: 9))
            let aps = try #require(object["aps"] as? [String: Any])
            let state = try JSONDecoder().decode(
                HeraldSaleAttributes.ContentState.self,
                from: JSONSerialization.data(withJSONObject: try #require(aps["content-state"])))
            #expect(state.step == step.number && state.campaign == 42)
            #expect(state.endDate == LiveActivityTests.end)
            #expect(state.price == step.state[.price]?.stringValue)
            if step.event == .start {
                #expect(aps["attributes-type"] as? String == HeraldSaleAttributes.typeName)
                let attributes = try JSONDecoder().decode(
                    HeraldSaleAttributes.self, from: JSONSerialization.data(withJSONObject: try #require(aps["attributes"])))
                #expect(attributes == HeraldSaleAttributes(campaign: 42, title: "Autumn flash sale"))
            }
        }
    }
}
