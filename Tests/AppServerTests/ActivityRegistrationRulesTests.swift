import AppServer
import Foundation
import Testing

/// What `PUT /v1/devices/{token}/activities/{campaign}` takes as the channel an activity listens
/// on: base64 as APNs made it, of any size (Apple states none), and nothing else.
@Suite("An activity's broadcast channel")
struct ActivityRegistrationRulesTests {
    static func body(channel: String) -> [UInt8] {
        Array(#"{"channel": "\#(channel)", "started_by": "push", "step": 0}"#.utf8)
    }

    @Test(arguments: [24, 64, 80, 344])
    func aBase64ChannelOfAnySizeIsTaken(bytes: Int) throws {
        let channel = Data((0..<(bytes * 3 / 4)).map { UInt8($0 % 251) }).base64EncodedString()
        #expect(channel.utf8.count == bytes)
        let activity = try ActivityRegistrationRules.activity(Self.body(channel: channel))
        #expect(activity.channel == channel)
    }

    @Test(arguments: ["", "abc", "not base64!", "YWJj-_8=", "YWJjZA"])
    func aChannelThatIsNotBase64IsRefusedAsBadChannel(channel: String) {
        #expect {
            try ActivityRegistrationRules.activity(Self.body(channel: channel))
        } throws: { error in
            (error as? AppServerError)?.code == "bad_channel"
        }
    }
}
