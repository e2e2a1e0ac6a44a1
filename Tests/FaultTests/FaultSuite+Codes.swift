import ExtensionKit
import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Codes handed out once (Sql/0038) under kill -9: two `herald run`
/// workers draw from one pool while one is killed mid-run, in each of two
/// rounds (both kills must land, and at least one send must be repeated); the codes
/// opened from the simulator's accepted envelopes (repeats included) give
/// each user one code on all their devices, never one code to two users,
/// and only codes of the pool.
extension FaultSuite {
    static let devicePrivateKey = "cJrAnNHJhDn2fv+Ykh6LsKej5no0OP0J3N3GHk+O7EA="
    static let devicePublicKey = "auYyK/2a0xkuiQUaAZhUtXUoa9++6wkcfSdWJjLLkUc="

    @Test func codesSurviveKillsWithoutADuplicate() async throws {
        let users = 2_000
        try await Self.scenario("codes", devices: users, name: "Codes", collapseID: "codes", extra: [
            "HERALD_CONCURRENCY": "50", "HERALD_BATCH_SIZE": "100",
        ], prepare: { client, campaign in
            try await client.exec("""
                INSERT INTO devices (user_id, token, environment, app_version)
                SELECT id, lpad(to_hex(id + 1048576), 64, '0'), 'production', '2.1' FROM users WHERE id % 4 = 0;
                UPDATE devices SET public_key = '\(Self.devicePublicKey)', key_id = 'k' || id;
                INSERT INTO code_pools (name) VALUES ('winter');
                INSERT INTO pool_codes (pool, code) SELECT 'winter', 'W-' || md5(n::text) FROM generate_series(1, \(users + 50)) n;
                UPDATE campaigns SET sensitive = '{"coupon": "{{ code }}", "who": "{{ user.external_id }}"}', code_pool = 'winter'
                WHERE id = \(campaign);
                """)
        }) { s in
            var kills = 0
            for round in 0..<2 {
                let a = try s.worker("worker-a\(round)")
                let b = try s.worker("worker-b\(round)")
                try await waitUntil("both workers draw and send", limit: .seconds(90)) {
                    try await s.count("SELECT count(*) FROM pool_codes WHERE campaign_id IS NOT NULL") > 200 * (round + 1)
                        || !a.isRunning || !b.isRunning
                }
                try await Task.sleep(for: .milliseconds(Int64.random(in: 100...500)))
                a.signal(SIGKILL)
                if try await a.wait(limit: .seconds(10)) == 128 + SIGKILL { kills += 1 }
                b.signal(SIGTERM)
                _ = try await b.wait(limit: .seconds(60))
            }
            try await s.runToCompletion()
            let f = try await s.figures(kills: kills)
            #expect(f.lost == 0 && f.failed == 0 && f.leftover == 0)
            #expect(f.delivered == s.devices + users / 4)
            #expect(kills == 2, "each round's kill landed while its worker ran")
            #expect(f.repeated >= 1, "a kill left sends unrecorded, and they went again: the same code on a repeat is tested")

            // Every accepted notification, repeats included, opened as its device would.
            let opener = EnvelopeOpener(privateKey: try .init(rawRepresentation: try #require(Data(base64Encoded: Self.devicePrivateKey))))
            let log = try #require(FileManager.default.contents(atPath: s.sim.logPath))
            var codeOf: [String: String] = [:]
            var userOf: [String: String] = [:]
            var opened = 0, conflicts = 0
            for line in log.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
                let payload = try JSONSerialization.data(withJSONObject: try #require(object["payload"]))
                let fields = try #require(try opener.sealedFields(in: try HeraldNotification(json: payload)))
                let user = try #require(fields["who"]), code = try #require(fields["coupon"])
                opened += 1
                if let had = codeOf[user], had != code { conflicts += 1 }
                if let had = userOf[code], had != user { conflicts += 1 }
                codeOf[user] = code
                userOf[code] = user
            }
            var pool = Set<String>()
            for try await code in try await s.client.query("SELECT code FROM pool_codes WHERE pool = 'winter'",
                                                           logger: TestDatabase.logger).decode(String.self) {
                pool.insert(code)
            }
            var given: [String: String] = [:]
            for try await (user, code) in try await s.client.query(
                "SELECT user_external_id, code FROM analyst.codes_given", logger: TestDatabase.logger).decode((String, String).self) {
                given[user] = code
            }
            print("fault suite [codes]: \(opened) envelopes opened (\(f.repeated) repeats after \(kills) kills), \(codeOf.count) users, \(Set(codeOf.values).count) codes, \(conflicts) conflicts")
            #expect(conflicts == 0, "a user with two codes, or a code with two users")
            #expect(codeOf.count == users)
            #expect(Set(codeOf.values).isSubset(of: pool))
            #expect(given == codeOf, "the ledger of codes is what the devices opened")
        }
    }
}
