import APNs
@testable import APNsSimulator
import Crypto
import ExtensionKit
import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Settings
import Store
import TestSupport
import Testing

/// Several apps in one run (Sql/0027), through `HeraldJob` as `herald run`
/// does it (the apps and their credentials read from the database), against
/// the simulator over HTTP/2 + TLS: the app `default` on the deployment's
/// token key, the app `companion` on a certificate (.p12) or a token key of
/// its own.
@Suite("Several apps in one run", .serialized)
struct AppsRunTests {
    static let companion = APNsSimulatorHarness.companionTopic

    /// The job as `herald run` makes it from its settings.
    static func job(_ database: DatabaseConfiguration, extra: [String: String] = [:]) throws -> HeraldJob {
        let config = try HeraldConfiguration(environment: [
            "DATABASE_URL": database.description, "HERALD_REPLY_SECRET": ReplySecret.generate().base64EncodedString(),
        ].merging(extra) { _, new in new })
        return HeraldJob(configuration: config, logger: TestDatabase.logger)
    }

    /// A credential of the app `companion` the simulator trusts, written as
    /// `herald apps add-credential` would.
    static func addCredential(_ kind: String, name: String, sim: RunningAPNsSimulator, client: Database) async throws
        -> (revoke: @Sendable () async -> Void, record: AppCredentialRecord)
    {
        if kind == "certificate" {
            let issued = try sim.issueClientCertificate(topics: [companion], name: name)
            let record = AppCredentialRecord(app: "companion", name: name, kind: .certificate,
                                             certificatePath: issued.p12Path, passwordFile: issued.passwordFilePath)
            try await AppStore(client: client, logger: TestDatabase.logger).addCredential(record)
            let serial = issued.serialNumber
            return ({ await sim.simulator.revokeCertificate(serialNumber: serial) }, record)
        }
        let key = P256.Signing.PrivateKey()
        let keyID = "C" + String(UUID().uuidString.filter(\.isLetter).prefix(9)).uppercased()
        let path = sim.directory + "/\(name).p8"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(key.pemRepresentation.utf8),
                                               attributes: [.posixPermissions: 0o600]))
        await sim.simulator.trustKey(keyID: keyID, publicKey: key.publicKey, teamID: "COMPTEAM01")
        let record = AppCredentialRecord(app: "companion", name: name, kind: .token, keyPath: path, keyID: keyID,
                                         teamID: "COMPTEAM01")
        try await AppStore(client: client, logger: TestDatabase.logger).addCredential(record)
        return ({ await sim.simulator.revokeKey(keyID: keyID) }, record)
    }

    /// A simulator serving the app `default` and `companion` (on `kind`), stopped afterwards whatever happens.
    static func withCompanion(_ kind: String, _ body: (RunningAPNsSimulator) async throws -> Void) async throws {
        let sim = try await APNsSimulatorHarness.start(apps: [simulatedCompanion(kind)])
        do {
            try await body(sim)
        } catch {
            await sim.stop()
            throw error
        }
        await sim.stop()
    }

    static func simulatedCompanion(_ kind: String) -> SimulatedApp {
        SimulatedApp(topic: companion, auth: kind == "certificate" ? .certificate : .token(teamID: "COMPTEAM01", keys: [:]))
    }

    /// `count` devices of the catalogue's audience, those matching `companionWhere` on the app `companion`.
    static func audience(_ client: Database, count: Int, companionWhere condition: String) async throws {
        try await client.exec(Fixtures.catalogue)
        try await client.exec(Fixtures.audience(count: count))
        try await client.exec("""
            INSERT INTO apps (name, display_name, topic) VALUES ('companion', 'Companion', '\(companion)');
            UPDATE devices SET app = 'companion' WHERE \(condition);
            """)
    }

    @Test("a dry run prints each device's own app's topic, as a run sends it")
    func dryRunTopics() async throws {
        try await TestDatabase.with { client, database in
            try await Self.audience(client, count: 30, companionWhere: "id % 3 = 0")
            try await client.exec(Fixtures.campaign(name: "Everyone"))
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("dry-\(UUID().uuidString).jsonl")
            defer { try? FileManager.default.removeItem(at: out) }
            let job = try Self.job(database, extra: ["APNS_TOPIC": "com.example.shop"])
            _ = try await job.dryRun(client: client, out: out.path)
            var topics: [String: String] = [:]
            for line in try String(contentsOf: out, encoding: .utf8).split(separator: "\n") {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let token = try #require(object["device"] as? String)
                topics[token] = (object["headers"] as? [String: Any])?["apns-topic"] as? String
            }
            var expected: [String: String] = [:]
            for try await (token, app) in try await client.query("SELECT token, app FROM devices", logger: TestDatabase.logger)
                .decode((String, String).self) {
                expected[token] = app == "companion" ? Self.companion : "com.example.shop"
            }
            #expect(topics.count == 30)
            #expect(topics == expected)
        }
    }

    @Test("a dry run prints exactly what the run then sends: every header and every payload byte, per device, for two apps")
    func dryRunIsWhatTheRunSends() async throws {
        try await TestDatabase.with { client, database in
            try await Self.audience(client, count: 30, companionWhere: "id % 3 = 0")
            try await client.exec(Fixtures.campaign(name: "Everyone", kind: "flash_sale"))
            try await Self.withCompanion("token") { sim in
                _ = try await Self.addCredential("token", name: "key", sim: sim, client: client)
                let job = try Self.job(database, extra: ["APNS_TOPIC": APNsSimulatorHarness.defaultTopic])
                let out = FileManager.default.temporaryDirectory.appendingPathComponent("dry-\(UUID().uuidString).jsonl")
                defer { try? FileManager.default.removeItem(at: out) }
                _ = try await job.dryRun(client: client, out: out.path)
                var printed: [String: (headers: [String: String], payload: Data)] = [:]
                for line in try String(contentsOf: out, encoding: .utf8).split(separator: "\n") {
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                    let token = try #require(object["device"] as? String)
                    let headers = try #require(object["headers"] as? [String: String])
                    let payload = try JSONSerialization.data(withJSONObject: try #require(object["payload"]), options: [.sortedKeys])
                    printed[token] = (headers, payload)
                }
                let summary = try await job.send(client: client, apns: sim.clientConfiguration)
                #expect(summary.figures.sent == 30)
                let accepted = await sim.simulator.accepted
                #expect(accepted.count == 30 && printed.count == 30)
                for notification in accepted {
                    let dry = try #require(printed[notification.deviceToken])
                    // The apns-id too: it is derived from the delivery id (herald_apns_id),
                    // so the dry run, which claims nothing, prints the one the run sends.
                    #expect(dry.headers["apns-id"] != nil)
                    for (name, value) in dry.headers {
                        #expect(notification.headers[name] == value, "\(name) of \(notification.deviceToken)")
                    }
                    let sent = try JSONSerialization.data(withJSONObject: try JSONSerialization.jsonObject(with: Data(notification.payload)),
                                                          options: [.sortedKeys])
                    #expect(sent == dry.payload, "the payload of \(notification.deviceToken)")
                }
            }
        }
    }

    static func figures(_ client: Database) async throws -> [String: String] {
        var out: [String: String] = [:]
        for try await (name, line) in try await client.query("""
            SELECT c.name, c.status || ' ' || count(*) FILTER (WHERE d.status = 'sent') || ' sent '
                   || count(*) FILTER (WHERE d.status = 'queued') || ' queued'
            FROM campaigns c LEFT JOIN delivery_status d ON d.campaign_id = c.id GROUP BY c.id
            """, logger: TestDatabase.logger).decode((String, String).self) {
            out[name] = line
        }
        return out
    }

    @Test("one app's revoked credential fails its campaigns with the reason; the other app's go out; fixed, they resume",
          arguments: ["certificate", "token"])
    func oneAppsFaultStaysThatApps(kind: String) async throws {
        try await TestDatabase.with { client, database in
            try await Self.audience(client, count: 300, companionWhere: "id % 3 = 0")
            try await client.exec(Fixtures.campaign(name: "Shop only"))
            try await client.exec(Fixtures.campaign(name: "Companion only"))
            try await client.exec(Fixtures.campaign(name: "Everyone"))
            try await client.exec("""
                UPDATE campaigns SET apps = ARRAY['default'] WHERE name = 'Shop only';
                UPDATE campaigns SET apps = ARRAY['companion'] WHERE name = 'Companion only';
                """)
            try await Self.withCompanion(kind) { sim in
                let (revoke, first) = try await Self.addCredential(kind, name: "first", sim: sim, client: client)
                await revoke()
                let job = try Self.job(database)
                let summary = try await job.send(client: client, apns: sim.clientConfiguration)
                let answer = kind == "certificate" ? "403 BadCertificate" : "403 InvalidProviderToken"
                #expect(summary.exitStatus == 1, "a person is needed")
                #expect(summary.refusedApps.keys.sorted() == ["companion"])
                #expect(summary.refusedApps["companion"] == "app companion (credential companion/first): APNs answered \(answer)")
                #expect(summary.report.contains("CREDENTIAL REFUSED: app companion"), "\(summary.report)")

                var figures = try await Self.figures(client)
                #expect(figures["Shop only"] == "completed 200 sent 0 queued")
                #expect(figures["Companion only"] == "failed 0 sent 100 queued")
                #expect(figures["Everyone"] == "failed 200 sent 100 queued")
                let reason = try await client.scalar("SELECT failure_reason FROM campaigns WHERE name = 'Companion only'",
                                                     as: String.self) ?? ""
                #expect(reason.hasPrefix("app companion (credential companion/first): APNs refused it (\(answer)); 100 deliveries wait. Fix the credential"),
                        "\(reason)")
                let accepted = await sim.simulator.accepted
                #expect(accepted.count == 400)
                #expect(accepted.allSatisfy { $0.headers["apns-topic"] == APNsSimulatorHarness.defaultTopic })

                // The fix: a new credential beside the old one (the newest is used), the campaigns resumed.
                _ = try await Self.addCredential(kind, name: "second", sim: sim, client: client)
                #expect(try await AppStore(client: client, logger: TestDatabase.logger).retireCredential(app: "companion", name: first.name))
                try await client.exec("UPDATE campaigns SET status = 'running', failure_reason = NULL WHERE status = 'failed'")
                let again = try await job.send(client: client, apns: sim.clientConfiguration)
                #expect(again.exitStatus == 0)
                #expect(again.refusedApps.isEmpty)
                figures = try await Self.figures(client)
                #expect(figures["Companion only"] == "completed 100 sent 0 queued")
                #expect(figures["Everyone"] == "completed 300 sent 0 queued")
                let companions = await sim.simulator.accepted.filter { $0.headers["apns-topic"] == Self.companion }
                #expect(companions.count == 200)
                #expect(Set(companions.map(\.deviceToken)).count == 100, "each companion device got both of its campaigns once")
                let byApp = try await client.scalar(
                    "SELECT string_agg(app || ' ' || sent || ' sent', ', ' ORDER BY app) FROM analyst.apps", as: String.self)
                #expect(byApp == "companion 200 sent, default 400 sent")
            }
        }
    }

    @Test("an APNs key or certificate is replaced while runs send: the old one beside the new, then retired; nothing refused",
          arguments: ["certificate", "token"])
    func anAPNsCredentialRotatesUnderLoad(kind: String) async throws {
        try await TestDatabase.with { client, database in
            try await Self.audience(client, count: 1200, companionWhere: "true")
            try await client.exec(Fixtures.campaign(name: "Before"))
            try await Self.withCompanion(kind) { sim in
                let (revokeFirst, first) = try await Self.addCredential(kind, name: "first", sim: sim, client: client)
                // Slow enough to overlap: small claims, few in flight.
                let job = try Self.job(database, extra: ["HERALD_BATCH_SIZE": "20", "HERALD_CONCURRENCY": "4"])
                let apns = sim.clientConfiguration
                let early = Task { try await job.send(client: client, apns: apns) }
                try await waitFor("the first run sending") {
                    (try await client.scalar("SELECT count(*) FROM delivery_status WHERE status = 'sent'", as: Int64.self) ?? 0) >= 100
                }
                // The new credential beside the old: a run started now sends with it, the one under way keeps the old.
                _ = try await Self.addCredential(kind, name: "second", sim: sim, client: client)
                let late = try await job.send(client: client, apns: apns)
                let firstRun = try await early.value
                #expect(firstRun.exitStatus == 0 && late.exitStatus == 0)
                #expect(firstRun.figures.sent > 0 && late.figures.sent > 0, "both runs sent: \(firstRun.figures.sent) and \(late.figures.sent)")
                #expect(firstRun.figures.sent + late.figures.sent == 1200)

                // The old one retired, then revoked: runs go on with the new one.
                #expect(try await AppStore(client: client, logger: TestDatabase.logger).retireCredential(app: "companion", name: first.name))
                await revokeFirst()
                try await client.exec(Fixtures.campaign(name: "After"))
                let after = try await job.send(client: client, apns: apns)
                #expect(after.exitStatus == 0 && after.figures.sent == 1200)
                let rejected = await sim.simulator.stats.rejected
                #expect(rejected.isEmpty, "\(rejected)")
                let accepted = await sim.simulator.accepted
                #expect(accepted.count == 2400)
                #expect(Set(accepted.map { $0.deviceToken + $0.apnsID }).count == 2400)
            }
        }
    }

    func waitFor(_ what: String, _ condition: () async throws -> Bool) async throws {
        let end = ContinuousClock().now + .seconds(60)
        while try await !condition() {
            guard ContinuousClock().now < end else { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test("an expired certificate is refused before connecting: its app's campaign fails, naming it")
    func anExpiredCertificateFailsItsAppsCampaign() async throws {
        try await TestDatabase.with { client, database in
            try await Self.audience(client, count: 30, companionWhere: "id % 2 = 0")
            try await client.exec(Fixtures.campaign(name: "Everyone"))
            try await Self.withCompanion("certificate") { sim in
                let past = Date(timeIntervalSinceNow: -30 * 86_400)...Date(timeIntervalSinceNow: -86_400)
                let issued = try sim.issueClientCertificate(topics: [Self.companion], name: "old", validity: past)
                try await AppStore(client: client, logger: TestDatabase.logger).addCredential(AppCredentialRecord(
                    app: "companion", name: "old", kind: .certificate, certificatePath: issued.certificatePath,
                    privateKeyPath: issued.privateKeyPath))
                let apps = try await AppStore(client: client, logger: TestDatabase.logger).all()
                let listed = AppsReport.lines(apps, defaultTopic: APNsSimulatorHarness.defaultTopic, now: Date())
                #expect(listed.contains { $0.contains("credential companion/old [any; in use for production, sandbox]: certificate")
                    && $0.contains("EXPIRED") && $0.contains("WARNING: the certificate has expired") }, "\(listed)")

                let summary = try await Self.job(database).send(client: client, apns: sim.clientConfiguration)
                #expect(summary.refusedApps["companion"] == "app companion (credential companion/old): APNs answered CertificateExpired")
                #expect(try await Self.figures(client)["Everyone"] == "failed 15 sent 15 queued")
                #expect(await sim.simulator.stats.accepted == 15)
            }
        }
    }

    @Test("categories belong to apps: checked when written; each app's document holds its own; the refresh and the campaign go to that app's devices")
    func categoriesBelongToApps() async throws {
        try await TestDatabase.with { client, database in
            try await Self.audience(client, count: 30, companionWhere: "id % 2 = 0")
            try await client.exec("""
                INSERT INTO actions (id, title, options) VALUES ('track', 'Track my order', 4);
                INSERT INTO categories (id, options, apps) VALUES ('order.v1', 0, ARRAY['companion']);
                INSERT INTO category_actions (category_id, action_id, position) VALUES ('order.v1', 'track', 1);
                """)
            #expect(await client.refusal("INSERT INTO categories (id, options, apps) VALUES ('x', 0, ARRAY['nope'])")?
                .contains(#"category "x": apps names no app nope"#) == true)
            // A campaign to every app may not use it; to the companion it may.
            try await client.exec(Fixtures.campaign(name: "Order") + ";\n" + """
                UPDATE campaigns SET apps = ARRAY['companion'] WHERE name = 'Order';
                UPDATE campaigns SET category_id = 'order.v1', send_at = now() + interval '30 minutes' WHERE name = 'Order';
                """)
            #expect(await client.refusal("UPDATE campaigns SET apps = NULL WHERE name = 'Order'")?
                .contains(#"category "order.v1" belongs to the apps companion only, and the campaign goes to every app"#) == true)
            #expect(await client.refusal("UPDATE campaigns SET apps = ARRAY['companion', 'default'] WHERE name = 'Order'")?
                .contains("the campaign also goes to default") == true)
            #expect(await client.refusal("UPDATE categories SET apps = ARRAY['default'] WHERE id = 'order.v1'")?
                .contains(#"campaign 1 "Order" uses it"#) == true)

            // Each app's document: the shared categories, and its own with their actions.
            let catalogue = try await ConfigStore(client: client, logger: TestDatabase.logger).catalogue()
            let shop = catalogue.document(for: "en", app: "default"), companion = catalogue.document(for: "en", app: "companion")
            #expect(shop.categoryHashes.keys.sorted() == ["feedback.v1", "flash_sale.v1", "poster.v1"])
            #expect(companion.categoryHashes.keys.sorted() == ["feedback.v1", "flash_sale.v1", "order.v1", "poster.v1"])
            #expect(!String(decoding: shop.body, as: UTF8.self).contains("track"))
            #expect(shop.categoryHashes["poster.v1"] == companion.categoryHashes["poster.v1"])

            try await Self.withCompanion("certificate") { sim in
                _ = try await Self.addCredential("certificate", name: "first", sim: sim, client: client)
                let job = try Self.job(database)
                // Half an hour ahead: the companion's devices get a refresh naming their app's document, nobody else.
                let before = try await job.send(client: client, apns: sim.clientConfiguration)
                #expect(before.configRefresh.sent == 15 && before.figures.sent == 0)
                let refreshes = await sim.simulator.accepted
                #expect(refreshes.allSatisfy { $0.headers["apns-topic"] == Self.companion })
                let etags = Set(refreshes.compactMap { HeraldConfigRefresh(json: Data($0.payload))?.etag })
                let expected = Set(["en", "zh-Hans", "fr"].map { catalogue.document(for: $0, app: "companion").etag })
                #expect(etags == expected, "one document per language, the companion's")

                try await client.exec("UPDATE campaigns SET send_at = now() WHERE name = 'Order'")
                let due = try await job.send(client: client, apns: sim.clientConfiguration)
                #expect(due.figures.sent == 15 && due.exitStatus == 0)
                let alerts = await sim.simulator.accepted.dropFirst(refreshes.count)
                #expect(alerts.count == 15 && alerts.allSatisfy { $0.headers["apns-topic"] == Self.companion })

                // The preview names the app and its topic.
                let preview = try await job.preview(client: client, campaign: 1)
                #expect(preview.text.contains("apps: companion (\(Self.companion))"), "\(preview.text)")
                #expect(preview.locales.first?.headers.first { $0.name == "apns-topic" }?.value == Self.companion)
            }
        }
    }

    @Test("without the APNS_* key, the app default sends with its credential from the database; with neither, the run refuses to start")
    func theDefaultAppsCredentialMayBeInTheDatabase() async throws {
        try await TestDatabase.with { client, database in
            try await Self.audience(client, count: 12, companionWhere: "false")
            try await client.exec(Fixtures.campaign(name: "Everyone"))
            try await Self.withCompanion("token") { sim in
                var keyless = sim.clientConfiguration
                keyless.credentials = [:]
                keyless.defaultCredential = nil
                let job = try Self.job(database)
                do {
                    _ = try await job.send(client: client, apns: keyless)
                    Issue.record("a run without any credential started")
                } catch let error as ConfigurationError {
                    #expect(error.key == "APNS_KEY_PATH")
                    #expect("\(error)".contains("no app has an APNs credential"))
                }
                #expect(try await client.scalar("SELECT count(*) FROM runs", as: Int64.self) == 0)

                let key = P256.Signing.PrivateKey()
                let path = sim.directory + "/default.p8"
                #expect(FileManager.default.createFile(atPath: path, contents: Data(key.pemRepresentation.utf8),
                                                       attributes: [.posixPermissions: 0o600]))
                await sim.simulator.trustKey(keyID: "DEFKEY0001", publicKey: key.publicKey, teamID: sim.teamID)
                try await AppStore(client: client, logger: TestDatabase.logger).addCredential(AppCredentialRecord(
                    app: "default", name: "2026-key", kind: .token, keyPath: path, keyID: "DEFKEY0001", teamID: sim.teamID))
                let summary = try await job.send(client: client, apns: keyless)
                #expect(summary.exitStatus == 0 && summary.figures.sent == 12)
                #expect(await sim.simulator.accepted.allSatisfy { $0.headers["apns-topic"] == APNsSimulatorHarness.defaultTopic })
            }
        }
    }
}
