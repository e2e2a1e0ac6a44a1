import Crypto
import Foundation
import NIOHPACK

/// The verdict on one request: status and Apple's reason (nil for 200).
struct Verdict {
    var status: Int
    var reason: String?
    var timestampMilliseconds: Int64?
    /// Headers and a JSON body of a success (the channel management API's).
    var headers: [(String, String)] = []
    var body: String?
    /// What the simulator counts a refusal under: the reason, or what exactly was wrong.
    var detail: String?
    /// The broadcast and channel endpoints answer `apns-request-id`, the device endpoint `apns-id`.
    var requestIDHeader = false

    static func reject(_ status: Int, _ reason: String) -> Verdict { Verdict(status: status, reason: reason) }
    static func badPayload(_ detail: String) -> Verdict { Verdict(status: 400, reason: "BadPayload", detail: "BadPayload: " + detail) }
}
