import APNs
import APNsSimulator
import Crypto
import Foundation
import HeraldCore
import PostgresNIO
import Reporting
import Runner
import Store
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The variant docs/marketers.md's "A/B variants" promises a device of `campaign`:
/// the first 32 bits of md5("<campaign>:<device>") as an unsigned number,
/// scaled to a bucket 0…99, against the shares laid end to end in name order.
/// Computed here with swift-crypto, independently of PostgreSQL.
private func expectedVariant(campaign: Int64, device: Int64, variants: [(name: String, share: Int)]) -> String? {
    let digest = Array(Insecure.MD5.hash(data: Data("\(campaign):\(device)".utf8)))
    let u = digest.prefix(4).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    let bucket = Int((u * 100) >> 32)
    var upper = 0
    for v in variants {
        upper += v.share
        if bucket < upper { return v.name }
    }
    return variants.last?.name
}

private func variantsOfDeliveries(_ client: Database, campaign: Int64) async throws -> [Int64: String] {
    var out: [Int64: String] = [:]
    for try await (device, variant) in try await client.query(
        "SELECT device_id, variant FROM delivery_status WHERE campaign_id = \(campaign) AND kind = 'campaign'",
        logger: TestDatabase.logger).decode((Int64, String).self) {
        out[device] = variant
    }
    return out
}

private func campaignID(_ client: Database, _ name: String) async throws -> Int64 {
    try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = '\(name)'", as: Int64.self))
}

/// Inserts variants given as (name, share, content JSON).
private func addVariants(_ client: Database, campaign: String, _ rows: [(String, Int, String)],
                         media: [String: String] = [:]) async throws {
    for (name, share, content) in rows {
        let url = media[name].map { "'\($0)'" } ?? "NULL"
        try await client.exec("""
            INSERT INTO campaign_variants (campaign_id, name, share, content, media_url)
            SELECT id, '\(name)', \(share), '\(content)', \(url) FROM campaigns WHERE name = '\(campaign)'
            """)
    }
}

/// Runs `body` logged in as a new member of `group` (herald_job,
/// herald_analyst), a role dropped afterwards: what the grants allow.
private func asMember<T: Sendable>(of group: String, _ database: DatabaseConfiguration, admin: Database,
                                   _ body: @Sendable (Database) async throws -> T) async throws -> T {
    let name = "t_variant_\(group.replacingOccurrences(of: "herald_", with: ""))_" + UUID().uuidString.prefix(8).lowercased()
    try await admin.exec("CREATE ROLE \(name) LOGIN IN ROLE \(group)")
    var config = database
    config.username = name
    let result: Result<T, any Error>
    do {
        result = .success(try await withPostgres(config, logger: TestDatabase.logger, body))
    } catch {
        result = .failure(error)
    }
    try await admin.exec("DROP ROLE \(name)")
    return try result.get()
}

@Suite("A/B variants: assignment, sending, the analyst's comparison", .serialized)
struct VariantTests {
    /// 10,000 devices split 20/30/50. The assignment is the documented md5
    /// bucket (checked against an independent implementation), the same on a
    /// second snapshot, and each share holds within ±3 standard deviations
    /// of a binomial draw (σ = √(n·p·(1−p)): ±120, ±137, ±150 devices), the
    /// spread a uniform hash gives; a wider miss means a biased assignment.
    @Test func assignmentIsStablePerDeviceAndHonoursTheShares() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 10_000))
            try await client.exec(Fixtures.campaign(name: "Split"))
            let shares = [("A", 20), ("B", 30), ("C", 50)]
            try await addVariants(client, campaign: "Split", shares.map {
                ($0.0, $0.1, #"{"en": {"title": "Variant \#($0.0)", "body": "Body"}}"#)
            })
            let id = try await campaignID(client, "Split")
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let due = try await stores.campaigns.loadCampaign(id)
            #expect(due.campaign.variants.map(\.name) == ["A", "B", "C"])

            // The preview counts per variant what the snapshot then writes.
            let preview = try await stores.audience.previewSnapshot(due)
            let first = try await stores.audience.snapshot(due, start: true)
            #expect(first.inserted == 10_000)
            #expect(first.variants == preview.variants)
            #expect(first.variants.map(\.devices).reduce(0, +) == 10_000)

            let assigned = try await variantsOfDeliveries(client, campaign: id)
            #expect(assigned.count == 10_000)
            var mismatches = 0
            for (device, variant) in assigned
            where expectedVariant(campaign: id, device: device, variants: shares.map { ($0.0, $0.1) }) != variant {
                mismatches += 1
            }
            #expect(mismatches == 0, "the assignment is md5('<campaign>:<device>') scaled to 100 buckets")
            for (name, share) in shares {
                let n = 10_000.0, p = Double(share) / 100
                let sigma = (n * p * (1 - p)).squareRoot()
                let got = Double(first.variants.first { $0.name == name }?.devices ?? 0)
                #expect(abs(got - n * p) <= 3 * sigma, "variant \(name): \(got) devices for a \(share)% share")
            }

            // The audience written again (as after a restore): every device keeps its variant.
            try await client.exec("""
                DELETE FROM deliveries WHERE campaign_id = \(id);
                UPDATE campaigns SET snapshot_at = NULL, status = 'scheduled' WHERE id = \(id);
                """)
            let second = try await stores.audience.snapshot(try await stores.campaigns.loadCampaign(id), start: true)
            #expect(second.variants == first.variants)
            #expect(try await variantsOfDeliveries(client, campaign: id) == assigned)

            // Another campaign splits the same devices independently: about half change sides at 50/50.
            let moved = try #require(try await client.scalar("""
                SELECT count(*) FROM devices
                WHERE (herald_variant_bucket(1, id) < 50) <> (herald_variant_bucket(2, id) < 50)
                """, as: Int64.self))
            #expect(abs(Double(moved) - 5_000) <= 3 * 50, "\(moved) of 10,000 devices changed sides")
        }
    }

    @Test func brokenVariantSetsFailOnlyTheirCampaignWithTheReason() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 30))
            for name in ["Good", "Short", "Lonely"] { try await client.exec(Fixtures.campaign(name: name)) }
            let text = #"{"en": {"title": "T", "body": "B"}}"#
            try await addVariants(client, campaign: "Good", [("A", 50, text), ("B", 50, text)])
            try await addVariants(client, campaign: "Short", [("A", 50, text), ("B", 40, text)])
            try await addVariants(client, campaign: "Lonely", [("Only", 60, text)])

            // What one row gets wrong is refused when written, naming the campaign and the variant.
            let good = try await campaignID(client, "Good")
            func insert(_ name: String, _ share: Int, _ content: String, media: String = "NULL") -> String {
                "INSERT INTO campaign_variants (campaign_id, name, share, content, media_url) VALUES (\(good), '\(name)', \(share), '\(content)', \(media))"
            }
            #expect(await client.refusal(insert("C", 10, #"{"en": {"title": "T"}}"#))?
                .contains(#"campaign "Good": variant "C": content for locale "en" needs a text "title" and "body""#) == true)
            #expect(await client.refusal(insert("C", 10, #"{"english": {"title": "T", "body": "B"}}"#))?
                .contains(#"variant "C": content key "english" is not a locale tag"#) == true)
            #expect(await client.refusal(insert("C", 10, text, media: "'http://cdn.example.com/x.gif'"))?
                .contains(#"campaign "Good": variant "C": media_url must be an https:// URL"#) == true)
            #expect(await client.refusal(insert("C", 100, text))?.contains("variant share is a whole percent from 1 to 99") == true)
            try await client.exec("UPDATE campaign_variants SET share = 25 WHERE campaign_id = \(good) AND name = 'B'")
            try await client.exec(insert("C", 15, text) + ";" + insert("D", 10, text))
            #expect(await client.refusal(insert("E", 1, text))?
                .contains(#"campaign "Good": variant "E" would be its 5th; a campaign has at most 4 variants"#) == true)

            let summary = try await withSimulator { sim in try await sendRun(client, apns: sim.clientConfiguration) }
            let byName = Dictionary(uniqueKeysWithValues: summary.campaigns.map { ($0.name, $0) })
            #expect(byName["Good"]?.completed == true)
            #expect(byName["Good"]?.sent == 30)
            #expect(byName["Short"]?.failure == #"campaign "Short": its variant shares add up to 90% (A 50%, B 40%); they must add up to 100%"#)
            #expect(byName["Lonely"]?.failure == #"campaign "Lonely": it has one variant (Only 60%); give it 2 to 4 variants, or none"#)
            #expect(try await client.scalar("SELECT failure_reason FROM campaigns WHERE name = 'Short'", as: String.self)?
                .contains("must add up to 100%") == true)
            #expect(try await client.scalar(
                "SELECT count(*) FROM delivery_status d JOIN campaigns c ON c.id = d.campaign_id WHERE c.name <> 'Good'",
                as: Int64.self) == 0)
            #expect(try await client.scalar(
                "SELECT string_agg(DISTINCT variant, ',' ORDER BY variant) FROM delivery_status WHERE campaign_id = \(good)",
                as: String.self) == "A,B,C,D")

            // Once the audience is assigned, the set stays; the text may still be corrected.
            #expect(await client.refusal("UPDATE campaign_variants SET share = 30 WHERE campaign_id = \(good) AND name = 'A'")?
                .contains(#"campaign "Good": its audience was assigned to its variants"#) == true)
            #expect(await client.refusal("DELETE FROM campaign_variants WHERE campaign_id = \(good) AND name = 'D'")?
                .contains(#"variant "D" cannot be deleted now"#) == true)
            #expect(await client.refusal("UPDATE campaign_variants SET content = '{\"en\": {\"title\": \"Fixed\", \"body\": \"B\"}}' WHERE campaign_id = \(good) AND name = 'A'") == nil)
        }
    }

    /// Sent as the job's least-privilege role would send it.
    @Test func eachDeviceGetsItsVariantsTextAndMedia() async throws {
        try await TestDatabase.with { client, database in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 90))   // en, zh-Hans, fr in turn
            try await client.exec(Fixtures.campaign(name: "Poster"))   // en "Hello", zh-Hans "你好"; p.gif
            try await addVariants(client, campaign: "Poster", [
                ("A", 50, #"{"en": {"title": "A title", "body": "A body"}}"#),
                ("B", 50, #"{"en": {"title": "B title", "body": "B body"}, "fr": {"title": "B titre", "body": "B corps"}}"#),
            ], media: ["B": "https://cdn.example.com/b.gif"])
            let id = try await campaignID(client, "Poster")
            // What each (variant, locale) must show: the variant's text where
            // it gives one, else the campaign's, else the default locale's.
            let expected: [String: (title: String, media: String)] = [
                "A/en": ("A title", "https://cdn.example.com/p.gif"), "A/zh-Hans": ("你好", "https://cdn.example.com/p.gif"),
                "A/fr": ("A title", "https://cdn.example.com/p.gif"),
                "B/en": ("B title", "https://cdn.example.com/b.gif"), "B/zh-Hans": ("你好", "https://cdn.example.com/b.gif"),
                "B/fr": ("B titre", "https://cdn.example.com/b.gif"),
            ]
            let stores = RunStores(client: client, logger: TestDatabase.logger)

            // The preview shows each variant per locale, and who would get which.
            let preview = try await CampaignPreview.make(stores: stores, campaign: id, topic: "com.example.herald")
            #expect(preview.canGoOut, "\(preview.problems)")
            #expect(preview.locales.map { "\($0.variant ?? "-")/\($0.locale)" }
                    == ["A/en", "A/zh-Hans", "B/en", "B/fr", "B/zh-Hans"])
            for l in preview.locales {
                let aps = try #require(try JSONSerialization.jsonObject(with: Data(l.payload)) as? [String: Any])["aps"] as? [String: Any]
                let title = (aps?["alert"] as? [String: Any])?["title"] as? String
                #expect(title == expected["\(l.variant ?? "")/\(l.locale)"]?.title)
            }
            let audience = try #require(preview.audience)
            #expect(audience.variants.map(\.name) == ["A", "B"])
            #expect(audience.variants.map(\.queued).reduce(0, +) == 90)
            #expect(preview.text.contains("variant B (50%): \(audience.variants[1].devices) devices"))
            let json = try #require(try JSONSerialization.jsonObject(with: Data(preview.json)) as? [String: Any])
            let listed = try #require(json["variants"] as? [[String: Any]])
            #expect(listed.map { $0["name"] as? String } == ["A", "B"])
            #expect(listed.compactMap { $0["queued"] as? Int }.reduce(0, +) == 90)
            #expect((json["locales"] as? [[String: Any]])?.map { $0["variant"] as? String } == ["A", "A", "B", "B", "B"])

            try await withSimulator { sim in
                let summary = try await asMember(of: "herald_job", database, admin: client) { job in
                    try await sendRun(job, apns: sim.clientConfiguration)
                }
                #expect(summary.figures.sent == 90)
                var variantOf: [Int64: String] = [:]
                var localeOf: [Int64: String] = [:]
                for try await (delivery, variant, locale) in try await client.query("""
                    SELECT d.id, d.variant, u.locale FROM delivery_status d JOIN users u ON u.id = d.user_id
                    WHERE d.campaign_id = \(id)
                    """, logger: TestDatabase.logger).decode((Int64, String, String).self) {
                    variantOf[delivery] = variant
                    localeOf[delivery] = locale
                }
                let accepted = await sim.simulator.accepted
                #expect(accepted.count == 90)
                var seen = Set<String>()
                for n in accepted {
                    let payload = try #require(try JSONSerialization.jsonObject(with: Data(n.payload)) as? [String: Any])
                    let herald = try #require(payload["herald"] as? [String: Any])
                    let delivery = try #require((herald["d"] as? NSNumber)?.int64Value)
                    let key = "\(variantOf[delivery] ?? "?")/\(localeOf[delivery] ?? "?")"
                    let want = try #require(expected[key], "no expectation for \(key)")
                    let alert = (payload["aps"] as? [String: Any])?["alert"] as? [String: Any]
                    #expect(alert?["title"] as? String == want.title, "\(key)")
                    #expect((herald["media"] as? [String: Any])?["url"] as? String == want.media, "\(key)")
                    seen.insert(key)
                }
                #expect(seen.count == 6, "every (variant, locale) pair was sent: \(seen.sorted())")

                // A test send carries the first variant's text by default, or the one named.
                let token = try #require(try await client.scalar(
                    "SELECT dv.token FROM devices dv JOIN users u ON u.id = dv.user_id WHERE u.locale = 'fr' ORDER BY dv.id LIMIT 1",
                    as: String.self))
                let byDefault = try await testSend(client, apns: sim.clientConfiguration, campaign: id, to: .device(token: token))
                #expect(byDefault.map(\.variant) == ["A"])
                do {
                    _ = try await testSendVariant(client, apns: sim.clientConfiguration, campaign: id, token: token, variant: "C")
                    Issue.record("a variant the campaign does not have was sent")
                } catch let problem as CampaignProblem {
                    #expect(problem.message == #"campaign "Poster" has no variant "C"; its variants are "A", "B""#)
                }
                let b = try await asMember(of: "herald_job", database, admin: client) { job in
                    try await testSendVariant(job, apns: sim.clientConfiguration, campaign: id, token: token, variant: "B")
                }
                #expect(b.map(\.variant) == ["B"])
                let last = try #require(await sim.simulator.accepted.last)
                let alert = ((try JSONSerialization.jsonObject(with: Data(last.payload)) as? [String: Any])?["aps"] as? [String: Any])?["alert"] as? [String: Any]
                #expect(alert?["title"] as? String == "B titre")
                #expect(try await client.scalar(
                    "SELECT string_agg(variant, ',' ORDER BY id) FROM delivery_status WHERE kind = 'test'", as: String.self) == "A,B")
            }
        }
    }

    /// A dry run's lines name each device's variant, and carry its text.
    @Test func dryRunLinesNameTheVariant() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 40, locales: ["en"]))
            try await client.exec(Fixtures.campaign(name: "Dry"))
            try await addVariants(client, campaign: "Dry", [
                ("A", 30, #"{"en": {"title": "A title", "body": "A"}}"#), ("B", 70, #"{"en": {"title": "B title", "body": "B"}}"#),
            ])
            let id = try await campaignID(client, "Dry")
            let sink = CollectingSink()
            _ = try await dryRun(client, sink: sink)
            var variantOf: [Int: String] = [:]
            for try await (delivery, variant) in try await client.query(
                "SELECT id, variant FROM delivery_status WHERE campaign_id = \(id)", logger: TestDatabase.logger).decode((Int64, String).self) {
                variantOf[Int(delivery)] = variant
            }
            let lines = await sink.payloads(campaign: Int(id))
            #expect(lines.count == 40)
            for line in lines {
                let variant = try #require(line["variant"] as? String)
                #expect(variant == variantOf[line["delivery"] as? Int ?? 0])
                let alert = ((line["payload"] as? [String: Any])?["aps"] as? [String: Any])?["alert"] as? [String: Any]
                #expect(alert?["title"] as? String == "\(variant) title")
            }
            #expect(Set(lines.compactMap { $0["variant"] as? String }) == ["A", "B"])
        }
    }

    /// The report's variant figures are the view's, and the view's are the ledger's.
    @Test func theReportShowsTheViewsComparison() async throws {
        try await TestDatabase.with { client, database in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 400))
            try await client.exec(Fixtures.campaign(name: "AB"))
            try await client.exec(Fixtures.campaign(name: "Plain"))
            let text = #"{"en": {"title": "T", "body": "B"}}"#
            try await addVariants(client, campaign: "AB", [("A", 50, text), ("B", 50, text)])
            let id = try await campaignID(client, "AB")
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            for name in ["AB", "Plain"] {
                _ = try await stores.audience.snapshot(try await stores.campaigns.loadCampaign(try await campaignID(client, name)), start: true)
            }
            // Everything sent but ten; a third of A's devices answer, half of B's;
            // some twice (a button, then a tap), one test send answered too.
            try await client.exec("""
                UPDATE deliveries SET status = 'sent', sent_at = now() WHERE id % 40 <> 0;
                INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                SELECT gen_random_uuid(), d.id, d.campaign_id, d.device_id, d.user_id,
                       CASE WHEN d.id % 2 = 0 THEN 'love_it' ELSE 'com.apple.UNNotificationDefaultActionIdentifier' END, now()
                FROM delivery_status d
                WHERE d.status = 'sent' AND ((d.variant = 'A' AND d.id % 3 = 0) OR (d.variant = 'B' AND d.id % 2 = 0));
                INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                SELECT gen_random_uuid(), d.id, d.campaign_id, d.device_id, d.user_id,
                       'com.apple.UNNotificationDefaultActionIdentifier', now()
                FROM delivery_status d WHERE d.variant = 'B' AND d.id % 4 = 0 AND d.status = 'sent';
                INSERT INTO deliveries (kind, campaign_id, device_id, user_id, status, sent_at, variant)
                SELECT 'test', campaign_id, device_id, user_id, 'sent', now(), 'A' FROM delivery_status WHERE campaign_id = \(id) LIMIT 1;
                INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                SELECT gen_random_uuid(), id, campaign_id, device_id, user_id, 'love_it', now() FROM delivery_status WHERE kind = 'test';
                """)
            let report = AnalystReport(client: client, logger: TestDatabase.logger)
            let data = try await report.data()
            let ab = try #require(data.campaigns.first { $0.id == id })
            // An analyst's own login (the views only) reads the same comparison.
            let asAnalyst = try await asMember(of: "herald_analyst", database, admin: client) { analyst in
                try await AnalystReport(client: analyst, logger: TestDatabase.logger).variants(campaign: id)
            }
            #expect(asAnalyst == ab.variants)
            #expect(data.campaigns.first { $0.name == "Plain" }?.variants.isEmpty == true)
            #expect(ab.variants.map(\.name) == ["A", "B"])

            // The ledger's own figures, counted here from the tables.
            for v in ab.variants {
                let sent = try await client.scalar(
                    "SELECT count(*) FROM delivery_status WHERE kind = 'campaign' AND campaign_id = \(id) AND variant = '\(v.name)' AND status = 'sent'",
                    as: Int64.self)
                let answered = try await client.scalar("""
                    SELECT count(DISTINCT r.delivery_id) FROM replies r JOIN delivery_status d ON d.id = r.delivery_id
                    WHERE d.kind = 'campaign' AND d.campaign_id = \(id) AND d.variant = '\(v.name)'
                    """, as: Int64.self)
                let opened = try await client.scalar("""
                    SELECT count(*) FROM replies r JOIN delivery_status d ON d.id = r.delivery_id
                    WHERE d.kind = 'campaign' AND d.campaign_id = \(id) AND d.variant = '\(v.name)'
                      AND r.action = 'com.apple.UNNotificationDefaultActionIdentifier'
                    """, as: Int64.self)
                #expect(v.sent == sent)
                #expect(v.respondingDevices == answered)
                #expect(v.opened == opened)
                #expect(v.actions.map(\.replies).reduce(0, +) == v.replies)
            }
            #expect(ab.variants.map(\.sent).reduce(0, +) == ab.sent)
            #expect(ab.variants.map(\.respondingDevices).reduce(0, +) == ab.respondingDevices)

            // The comparison, computed here from the counts: the pooled two-proportion z and erfc.
            let a = ab.variants[0], b = ab.variants[1]
            let (x1, n1, x2, n2) = (Double(a.respondingDevices), Double(a.sent), Double(b.respondingDevices), Double(b.sent))
            let pooled = (x1 + x2) / (n1 + n2)
            let z = (x2 / n2 - x1 / n1) / (pooled * (1 - pooled) * (1 / n1 + 1 / n2)).squareRoot()
            #expect(a.z == nil && a.pValue == nil)
            #expect(abs((b.z ?? .nan) - z) < 1e-9)
            #expect(abs((b.pValue ?? .nan) - erfc(abs(z) / 2.0.squareRoot())) < 2e-7)

            // The view as an analyst reads it equals the report.
            for try await (variant, sent, answered, rate, z, p) in try await client.query("""
                SELECT variant, sent, responding_devices, response_rate_pct::float8, z, p_value
                FROM analyst.variant_comparison WHERE campaign_id = \(id)
                """, logger: TestDatabase.logger).decode((String, Int64, Int64, Double?, Double?, Double?).self) {
                let v = try #require(ab.variants.first { $0.name == variant })
                #expect(v.sent == sent && v.respondingDevices == answered && v.responseRatePct == rate && v.z == z && v.pValue == p)
            }

            // The page: a Variants section with the verdict, only for the campaign that has variants.
            let html = ReportPage.html(data)
            #expect(html.components(separatedBy: "<h3>Variants</h3>").count == 2)
            #expect(html.contains(b.verdict))
            #expect(b.verdict.hasPrefix((b.pValue ?? 1) < 0.05 ? "significant" : "not significant yet"))
            let rendered = try await report.render(campaign: id)
            #expect(rendered.contains("variant B (50%): sent \(b.sent), answered \(b.respondingDevices)"))
        }
    }

    /// herald_two_sided_p against the C library's erfc, and textbook values.
    @Test func pValueFunctionOnKnownValues() async throws {
        try await TestDatabase.with { client, _ in
            for z in [0.0, 0.25, 0.5, 1.0, 1.5, 1.959964, 2.0, 2.575829, 3.0, 3.290527, 4.0, 6.0, -1.959964, -3.0] {
                let p = try #require(try await client.scalar("SELECT herald_two_sided_p(\(z))", as: Double.self))
                #expect(abs(p - erfc(abs(z) / 2.0.squareRoot())) <= 1.5e-7, "z = \(z): \(p)")
            }
            let textbook: [(Double, Double)] = [(1.959964, 0.05), (2.575829, 0.01), (3.290527, 0.001), (1.0, 0.317311), (0, 1)]
            for (z, want) in textbook {
                let p = try #require(try await client.scalar("SELECT herald_two_sided_p(\(z))", as: Double.self))
                #expect(abs(p - want) <= 1e-6, "z = \(z): \(p), want \(want)")
            }
            #expect(try await client.scalar("SELECT herald_two_sided_p(NULL) IS NULL", as: Bool.self) == true)
            // Far in the tail (a lopsided test on a large audience) it is 0, not an underflow error.
            for z in [36.9, 37.5, 120.0, -1e6] {
                let p = try #require(try await client.scalar("SELECT herald_two_sided_p(\(z))", as: Double.self))
                #expect(p >= 0 && p < 1e-290, "z = \(z): \(p)")
            }
            // The verdict's wording around the (Bonferroni-split) level.
            var v = ReportData.Variant(name: "B", position: 2, variants: 2, sharePct: 50, baseline: "A")
            v.sent = 100
            v.z = 1.0
            v.pValue = 0.3173
            #expect(v.verdict == "not significant yet (p = 0.32)")
            v.z = -2.2
            v.pValue = 0.0278
            #expect(v.verdict == "significant (p = 0.028): B answers less than A")
            v.variants = 3
            #expect(v.verdict == "not significant yet (p = 0.028)")
            v.pValue = 0.0001
            #expect(v.verdict == "significant (p < 0.001): B answers less than A")
        }
    }
}

/// `herald send-test --variant NAME` against the simulator.
private func testSendVariant(_ client: Database, apns: APNsConfiguration, campaign: Int64, token: String,
                             variant: String) async throws -> [TestSendAnswer] {
    let apnsClient = try APNsClient(configuration: apns, logger: TestDatabase.logger)
    let test = TestSend(stores: RunStores(client: client, logger: TestDatabase.logger), topic: apns.topic,
                        personalizer: ReplyLoopPersonalizer(tokens: ReplyTokens(secret: .generate())), transport: apnsClient)
    return try await withThrowingTaskGroup(of: [TestSendAnswer]?.self) { group in
        group.addTask {
            try await apnsClient.run()
            return nil
        }
        defer { group.cancelAll() }
        return try await test.send(campaign: campaign, to: .device(token: token), variant: variant)
    }
}
