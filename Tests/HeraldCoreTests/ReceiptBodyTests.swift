import ExtensionKit
import Foundation
import HeraldCore
import Testing

@Suite("Receipt bodies (contract 8)")
struct ReceiptBodyTests {
    @Test func theKitsBodyIsWhatTheServerReadsToTheMillisecond() throws {
        let at = Date(timeIntervalSince1970: 1_795_000_003.2507)
        let receipts = [Receipt(delivery: 7, token: "tok\"en", arrivedAt: at, sealedOpened: true),
                        Receipt(delivery: 8, token: "t", arrivedAt: at, mediaAttached: false)]
        let body = try Receipt.body(receipts)
        #expect(String(decoding: body, as: UTF8.self) == #"{"receipts":[{"arrived_at":"2026-11-18T11:06:43.250Z","delivery":7,"sealed_opened":true,"token":"tok\"en"},{"arrived_at":"2026-11-18T11:06:43.250Z","delivery":8,"media_attached":false,"token":"t"}]}"#)
        let read = try ReceiptRules.decode(body)
        #expect(read == receipts)
        #expect(read[0].arrivedAt.timeIntervalSince1970 == 1_795_000_003.25)
        #expect(Receipt.timestamp("2026-11-18T11:06:43.2Z")?.timeIntervalSince1970 == 1_795_000_003.2)
        #expect(Receipt.timestamp("2026-11-18T12:06:43.123456+01:00")?.timeIntervalSince1970 == 1_795_000_003.123)
        #expect(Receipt.timestamp("2026-11-18T11:06:43Z")?.timeIntervalSince1970 == 1_795_000_003)
    }
}
