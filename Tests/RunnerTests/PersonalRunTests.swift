import APNs
import ExtensionKit
import Foundation
import HeraldCore
import Runner
import Store
import TestSupport
import Testing

/// Text made for each person, through a real run against the APNs
/// simulator (TLS + HTTP/2): each device shows its own user's name and
/// figures, defaults where data is missing, and a device that lacks a
/// variable or whose payload would be too large is skipped with its reason.
@Suite("Runs that send text made for each person", .serialized)
struct PersonalRunTests {
    /// 60 users (u1…u60, a device each, in en, zh-Hans and fr); users whose
    /// number is a multiple of 5 have no first name. u1…u40 are the
    /// campaign's recipients, with points; u7 has none, u11 a note too long
    /// for one payload.
    static let setup = """
        UPDATE users SET attributes = attributes || jsonb_build_object('first_name', 'Name' || substr(external_id, 2))
        WHERE substr(external_id, 2)::int % 5 <> 0;
        INSERT INTO campaigns (name, kind, status, audience, content, default_locale, category_id, custom, quiet_hours, frequency_capped,
                               media_url, media_type)
        VALUES ('Points week', 'poster', 'scheduled', 'recipients',
                '{"en": {"title": "{{ user.first_name | default: \\"there\\" }}, {{ recipient.points | number }} points",
                         "body": "{{ campaign.name }} for {{ user.external_id }}{{ recipient.note | default: \\"\\" }}"},
                  "fr": {"title": "{{ user.first_name | default: \\"Bonjour\\" }}, {{ recipient.points | number }} points",
                         "body": "{{ campaign.name }} pour {{ user.external_id }}{{ recipient.note | default: \\"\\" }}"}}',
                'en', 'poster.v1', '{"tier": "{{ user.tier | upcase }}"}', false, false,
                'https://cdn.example.com/{{ user.tier }}.gif', 'gif');
        INSERT INTO campaign_recipients (campaign_id, external_id, data)
        SELECT (SELECT id FROM campaigns WHERE name = 'Points week'), 'u' || n,
               CASE WHEN n = 7 THEN '{}'::jsonb
                    WHEN n = 11 THEN jsonb_build_object('points', n * 1000, 'note', repeat('x', 5000))
                    ELSE jsonb_build_object('points', n * 1000) END
        FROM generate_series(1, 40) n;
        """

    @Test func eachDeviceShowsItsOwnUsersNameAndFiguresAndOnlyTheRecipientsGetIt() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 60))
            try await client.exec(Self.setup)
            try await withSimulator { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.figures.targeted == 40)
                #expect(summary.figures.sent == 38)
                #expect(summary.figures.skipped == 2)
                let accepted = await sim.simulator.accepted
                #expect(accepted.count == 38)
                var seen = Set<Int>()
                for n in accepted {
                    // The fixture's token is the user's id in hex; users were made in order.
                    let user = try #require(Int(n.deviceToken, radix: 16))
                    seen.insert(user)
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(n.payload)) as? [String: Any])
                    let alert = try #require((object["aps"] as? [String: Any])?["alert"] as? [String: Any])
                    let locale = ["en", "zh-Hans", "fr"][user % 3]
                    let name = user % 5 == 0 ? (locale == "fr" ? "Bonjour" : "there") : "Name\(user)"
                    let points = locale == "fr" ? "\(user)\u{202F}000" : "\(user),000"
                    #expect(alert["title"] as? String == "\(name), \(points) points", "u\(user)")
                    #expect(alert["body"] as? String == "Points week \(locale == "fr" ? "pour" : "for") u\(user)")
                    let tier = user % 2 == 0 ? "GOLD" : "FREE"
                    #expect(((object["herald"] as? [String: Any])?["x"] as? [String: Any])?["tier"] as? String == tier)
                    #expect(!String(decoding: n.payload, as: UTF8.self).contains("{{"))
                }
                #expect(seen == Set(1...40).subtracting([7, 11]))
                // The two left out are in the ledger with their reasons.
                var reasons: [String: String] = [:]
                for try await (user, reason) in try await client.query("""
                    SELECT u.external_id, d.last_error FROM delivery_status d JOIN users u ON u.id = d.user_id
                    WHERE d.status = 'skipped' ORDER BY 1
                    """, logger: TestDatabase.logger).decode((String, String).self) {
                    reasons[user] = reason
                }
                #expect(reasons["u7"] == "recipient.points has no value and no default")
                #expect(reasons["u11"] == "its payload, made for it, is over APNs' 4096 bytes")
                #expect(reasons.count == 2)
                #expect(try await client.scalar("SELECT status FROM campaigns", as: String.self) == "completed")
            }
        }
    }

    @Test func aTemplateThatDoesNotParseFailsItsCampaignAloneWithTheLineAndColumn() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 20))
            try await client.exec(Self.setup)
            try await client.exec("""
                UPDATE campaigns SET content = jsonb_set(content, '{fr,body}', '"Bonjour\\n {{ user.first_name | shout }}"')
                WHERE name = 'Points week'
                """)
            try await client.exec(Fixtures.campaign(name: "Plain"))
            try await withSimulator { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.figures.sent == 20)
                #expect(try await client.scalar("SELECT failure_reason FROM campaigns WHERE name = 'Points week'", as: String.self)
                        == "content.fr.body: template line 2, column 23: unknown filter \"shout\": use default, upcase, downcase, capitalize, truncate, number, money or date")
                #expect(try await client.scalar("SELECT status FROM campaigns WHERE name = 'Plain'", as: String.self) == "completed")
            }
        }
    }

    /// The key of the fixture's sealed-envelope vectors: every device here
    /// has its public half, so the test opens what each device would.
    static let devicePrivateKey = "cJrAnNHJhDn2fv+Ykh6LsKej5no0OP0J3N3GHk+O7EA="
    static let devicePublicKey = "auYyK/2a0xkuiQUaAZhUtXUoa9++6wkcfSdWJjLLkUc="

    @Test func eachUserDrawsOneCodeForAllTheirDevicesAndAnEmptyPoolSkipsTheRest() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 30))
            try await client.exec("""
                INSERT INTO devices (user_id, token, environment, app_version)
                SELECT id, lpad(to_hex(id + 4096), 64, '0'), 'production', '2.1' FROM users WHERE id <= 5;
                UPDATE devices SET public_key = '\(Self.devicePublicKey)', key_id = 'k' || id;
                INSERT INTO code_pools (name) VALUES ('autumn');
                INSERT INTO pool_codes (pool, code) SELECT 'autumn', 'C' || lpad(n::text, 3, '0') FROM generate_series(1, 28) n;
                INSERT INTO campaigns (name, kind, status, content, category_id, sensitive, code_pool, expires_at, quiet_hours, frequency_capped)
                VALUES ('Coupons', 'flash_sale', 'scheduled', '{"en": {"title": "Your code", "body": "Open to see it"}}',
                        'flash_sale.v1', '{"coupon": "{{ code }}", "who": "{{ user.external_id }}"}', 'autumn',
                        now() + interval '1 hour', false, false);
                """)
            try await withSimulator { sim in
                let summary = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(summary.figures.targeted == 35)
                let accepted = await sim.simulator.accepted
                let opener = EnvelopeOpener(privateKey: try .init(rawRepresentation: try #require(Data(base64Encoded: Self.devicePrivateKey))))
                var codeOf: [String: String] = [:]
                var usersOf: [String: Set<String>] = [:]
                for n in accepted {
                    let notification = try HeraldNotification(json: Data(n.payload))
                    let fields = try #require(try opener.sealedFields(in: notification))
                    let user = try #require(fields["who"]), code = try #require(fields["coupon"])
                    #expect(codeOf[user] == nil || codeOf[user] == code, "\(user) got two codes")
                    codeOf[user] = code
                    usersOf[code, default: []].insert(user)
                }
                // 28 users got one code each, on every one of their devices; two found the pool used up.
                #expect(codeOf.count == 28)
                #expect(usersOf.values.allSatisfy { $0.count == 1 })
                #expect(Set(codeOf.values) == Set((1...28).map { "C" + String(format: "%03d", $0) }))
                let skipped = try await client.query("""
                    SELECT u.external_id, d.last_error FROM delivery_status d JOIN users u ON u.id = d.user_id WHERE d.status = 'skipped'
                    """, logger: TestDatabase.logger).decode((String, String).self)
                var skippedUsers = Set<String>()
                for try await (user, reason) in skipped {
                    #expect(reason == "code none left: the campaign's code pool is used up")
                    skippedUsers.insert(user)
                }
                #expect(skippedUsers.count == 2)
                #expect(skippedUsers.isDisjoint(with: codeOf.keys))
                #expect(accepted.count == 35 - (try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'skipped'", as: Int64.self) ?? 0))
                // Analysts see who got which code, as the devices did.
                var given: [String: String] = [:]
                for try await (user, code) in try await client.query(
                    "SELECT user_external_id, code FROM analyst.codes_given", logger: TestDatabase.logger).decode((String, String).self) {
                    given[user] = code
                }
                #expect(given == codeOf)
                #expect(try await client.scalar("SELECT remaining FROM analyst.code_pools WHERE pool = 'autumn'", as: Int64.self) == 0)
            }
        }
    }

    @Test func thePreviewRendersTheRealRecipientsAndCountsEachSkipReason() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 60))
            try await client.exec(Self.setup)
            let id = try #require(try await client.scalar("SELECT id FROM campaigns", as: Int64.self))
            let preview = try await CampaignPreview.make(stores: RunStores(client: client, logger: TestDatabase.logger),
                                                         campaign: id, topic: "com.example.app")
            let personal = try #require(preview.personal)
            #expect(preview.audience?.queued == 40)
            #expect(personal.rendered == 40)
            #expect(personal.skips == ["recipient.points has no value and no default": 1,
                                       "its payload, made for it, is over APNs' 4096 bytes": 1])
            // Three real recipients per content locale, with their own text.
            #expect(personal.samples.filter { $0.locale == "en" }.count == 3)
            #expect(personal.samples.filter { $0.locale == "fr" }.count == 3)
            for s in personal.samples {
                let n = try #require(Int(s.user.dropFirst()))
                let name = n % 5 == 0 ? (s.locale == "fr" ? "Bonjour" : "there") : "Name\(n)"
                #expect(s.title.hasPrefix("\(name), \(n)"), "\(s)")
            }
            let largest = try #require(personal.largest)
            #expect(largest.bytes > 300 && largest.bytes < 4096)
            #expect(preview.text.contains("would skip 1 device: recipient.points has no value and no default"))
            #expect(preview.text.contains("largest payload made for one device: \(largest.bytes) of 4096 bytes"))
            // Nothing was written: the ledger is empty, no code drawn.
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status", as: Int64.self) == 0)
        }
    }
}
