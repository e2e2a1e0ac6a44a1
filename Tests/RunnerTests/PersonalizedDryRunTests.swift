import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Store
import TestSupport
import Testing

@Suite("Dry run: reply tokens and sealed fields")
struct PersonalizedDryRunTests {
    // The key pair of sealed-envelope-v1.json vectors[0]; Fixtures.audience gives it to every 3rd device.
    static let privateKey = "cJrAnNHJhDn2fv+Ykh6LsKej5no0OP0J3N3GHk+O7EA="

    @Test func payloadsCarryTokenAndEnvelope() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 9))
            try await client.exec(Fixtures.campaign(name: "Sale", kind: "flash_sale"))
            try await client.exec(#"UPDATE campaigns SET sensitive = '{"coupon": "FLASH-7Q2K", "price": "¥99"}'"#)
            let secret = ReplySecret.generate()
            let sink = CollectingSink()
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let summary = try await CampaignRun(
                stores: stores, options: RunOptions(topic: "t", dryRun: true),
                personalizer: ReplyLoopPersonalizer(tokens: ReplyTokens(secret: secret)),
                sink: sink, logger: TestDatabase.logger).execute()
            // Devices without a key are skipped at the snapshot, with the reason.
            #expect(summary.campaigns.first?.snapshot?.skipped == 6)
            #expect(try await client.scalar(
                "SELECT DISTINCT last_error FROM delivery_status WHERE status = 'skipped'", as: String.self)
                == "device has no registered key for the sealed fields")
            let lines = await sink.payloads(campaign: 1)
            #expect(lines.count == 3)
            let opener = EnvelopeOpener(privateKey: try Curve25519.KeyAgreement.PrivateKey(
                rawRepresentation: try #require(Data(base64Encoded: Self.privateKey))))
            let tokens = ReplyTokens(secret: secret)
            for line in lines {
                let payload = try JSONSerialization.data(withJSONObject: try #require(line["payload"]))
                let notification = try HeraldNotification(json: payload)
                #expect(tokens.verify(try #require(notification.replyToken), delivery: notification.delivery))
                let fields = try opener.openFields(try #require(notification.sealed), campaign: 1, delivery: notification.delivery)
                #expect(fields == ["coupon": "FLASH-7Q2K", "price": "¥99"])
                // The coupon never travels in clear.
                #expect(!String(decoding: payload, as: UTF8.self).contains("FLASH-7Q2K"))
                // Bound to its delivery: another delivery's aad does not open it.
                #expect(throws: OpenError.self) {
                    _ = try opener.openFields(try #require(notification.sealed), campaign: 1, delivery: notification.delivery + 1)
                }
            }
        }
    }
}
