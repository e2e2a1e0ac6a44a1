import Crypto
import Foundation
import NIOHPACK

enum HeaderRules {
    static let validPushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
        "pushtotalk", "controls", "widgets",
    ]
    static let singleValued: [String] = [
        ":method", ":path", "authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration",
        "apns-collapse-id", "apns-id",
    ]

    static func isHexToken(_ token: Substring) -> Bool {
        token.utf8.count >= 64
            && token.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
    }

    static func isUUID(_ text: String) -> Bool {
        UUID(uuidString: text) != nil
    }

    /// The `aps` dictionary of a JSON object (nil: not a notification object).
    static func aps(_ body: [UInt8]) -> [String: Any]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        return object["aps"] as? [String: Any]
    }
}
