import AppServer
import ExtensionKit
import Foundation
import HeraldCore
import Logging
import PostgresNIO
import Runner
import Settings
import Store
import TestSupport
import Testing

/// Connects to `database` as a new login role that is a member of `group`
/// (and nothing else), for the time of `body`.
func asMember<T: Sendable>(
    of group: String, database: DatabaseConfiguration, admin: Database,
    _ body: @Sendable (Database, DatabaseConfiguration) async throws -> T
) async throws -> T {
    let name = "t_\(group.replacingOccurrences(of: "herald_", with: ""))_" + UUID().uuidString.prefix(8).lowercased()
    try await admin.exec("CREATE ROLE \(name) LOGIN IN ROLE \(group)")
    let config = {
        var c = database
        c.username = name
        return c
    }()
    let result: Result<T, any Error>
    do {
        result = .success(try await withPostgres(config, logger: TestDatabase.logger) { try await body($0, config) })
    } catch {
        result = .failure(error)
    }
    try await admin.exec("DROP ROLE \(name)")
    return try result.get()
}

/// The statements of `sql` that the server refused for lack of privilege;
/// any other outcome is an issue of the test.
func refused(_ client: Database, _ statements: [String]) async -> [String] {
    var out: [String] = []
    for sql in statements {
        do {
            try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger)
            Issue.record("allowed: \(sql)")
        } catch {
            let state = StoreError.sqlState(of: error)
            if state == "42501" { out.append(sql) } else { Issue.record("\(sql): \(ErrorText.describe(error))") }
        }
    }
    return out
}

@Suite("Least-privilege roles (Sql/0006_roles.sql)")
struct RolesTests {
    @Test func theIntakeStoresReceiptsAndConversions() async throws {
        try await withIntakeDatabase { _, admin, database in
            try await admin.exec("INSERT INTO users (external_id, time_zone) VALUES ('buyer', 'UTC')")
            try await asMember(of: "herald_intake", database: database, admin: admin) { client, _ in
                let receipts = ReceiptStore(client: client, logger: TestDatabase.logger)
                let stored = try await receipts.store([Receipt(delivery: 1, token: "t", arrivedAt: Date(), mediaAttached: true),
                                                       Receipt(delivery: 999, token: "t", arrivedAt: Date())])
                #expect(stored.stored == 1 && stored.unknown == [999])
                let conversions = ConversionStore(client: client, logger: TestDatabase.logger)
                let c = Conversion(user: "buyer", event: "purchase", occurredAt: Date(), amount: "5.00", currency: "EUR",
                                   idempotencyKey: "role-order")
                #expect(try await conversions.store([c, c], source: "api") == [.stored, .duplicate])
                #expect(try await conversions.store([c], source: "api") == [.duplicate])
                // It still may not read what others wrote.
                #expect(await refused(client, ["SELECT amount FROM conversions", "SELECT * FROM receipts"]).count == 2)
            }
        }
    }

    @Test func theIntakeStoresRepliesButCannotChangeCampaignsOrReadDevices() async throws {
        try await withIntakeDatabase { _, admin, database in
            try await asMember(of: "herald_intake", database: database, admin: admin) { client, _ in
                // What serve and ingest do works.
                let intake = ReplyIntake(store: ReplyStore(client: client, logger: TestDatabase.logger), tokens: abuseTokens, logger: TestDatabase.logger)
                let body = HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "as the intake"))
                #expect(try await intake.submit(body) == .success(.stored))
                #expect(try await intake.submit(body) == .success(.duplicate))
                // `herald ingest` stores through the same statement.
                let path = FileManager.default.temporaryDirectory.appendingPathComponent("roles-\(UUID()).jsonl").path
                try (String(decoding: HostileTable.object(HostileTable.fields(delivery: 1, action: "love_it")), as: UTF8.self) + "\n")
                    .write(toFile: path, atomically: true, encoding: .utf8)
                defer { try? FileManager.default.removeItem(atPath: path) }
                let ingested = try await intake.ingest(file: path)
                #expect(ingested.stored == 1 && ingested.bad.isEmpty)
                // The notification config, read and recorded as `herald serve` does.
                let configs = ConfigStore(client: client, logger: TestDatabase.logger)
                let document = try await configs.catalogue().document(for: "en", app: AppRecord.defaultName)
                #expect(document.body.count > 100)
                try await configs.record([("en", document)])
                // Device registration (contract 6): a new device with its key, the
                // same device again without one (its key stays), then for another user.
                let devices = DeviceStore(client: client, logger: TestDatabase.logger)
                let token = String(repeating: "ab", count: 32)
                var registration = DeviceRegistration(token: token, environment: .production, user: "role-user",
                                                      locale: "fr", timeZone: "Europe/Paris")
                registration.publicKey = "auYyK/2a0xkuiQUaAZhUtXUoa9++6wkcfSdWJjLLkUc="
                registration.keyID = "role-key"
                guard case .stored(_, true, nil) = try await devices.register(registration, issuedAt: Date()) else {
                    Issue.record("the intake's role could not register a device")
                    return
                }
                registration.publicKey = nil
                registration.keyID = nil
                registration.user = "role-user-2"
                guard case .stored(_, false, "role-user") = try await devices.register(registration, issuedAt: Date()) else {
                    Issue.record("the intake's role could not update a device")
                    return
                }
                #expect(try await devices.unregister(token: token, user: "role-user-2") == .unregistered)

                let statements = [
                    "UPDATE campaigns SET status = 'paused'",
                    "UPDATE campaigns SET content = '{}'",
                    "INSERT INTO campaigns (name, kind, content) VALUES ('x', 'poster', '{}')",
                    "DELETE FROM campaigns",
                    "SELECT content FROM campaigns",
                    "SELECT public_key FROM devices",
                    "SELECT * FROM devices",
                    "SELECT * FROM users",
                    "DELETE FROM devices",
                    "UPDATE users SET external_id = 'x'",
                    "INSERT INTO campaign_status_changes (campaign_id, to_status, changed_by) VALUES (1, 'x', 'x')",
                    "SELECT text FROM replies",
                    // Replies go in through herald_commit_replies only, which checks their deliveries.
                    "INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at) VALUES (gen_random_uuid(), 1, 1, 1, 1, 'love_it', now())",
                    "UPDATE replies SET text = 'x'",
                    "DELETE FROM replies",
                    "TRUNCATE replies",
                    "UPDATE deliveries SET status = 'failed'",
                    "INSERT INTO actions (id, title) VALUES ('x', 'x')",
                    "CREATE TABLE intake_owned (id int)",
                    "DROP TABLE replies",
                ]
                #expect(await refused(client, statements) == statements)
            }
            #expect(try await admin.scalar("SELECT text FROM replies WHERE text IS NOT NULL", as: String.self) == "as the intake")
            #expect(try await admin.scalar("SELECT key_id || ' ' || public_key FROM devices WHERE key_id = 'role-key'", as: String.self)
                    == "role-key auYyK/2a0xkuiQUaAZhUtXUoa9++6wkcfSdWJjLLkUc=")
        }
    }

    @Test func theAnalystReadsTheViewsOnly() async throws {
        try await withIntakeDatabase { intake, admin, database in
            _ = try await intake.submit(HostileTable.object(HostileTable.fields(delivery: 2, action: "comment", text: "seen by analysts")))
            try await asMember(of: "herald_analyst", database: database, admin: admin) { client, _ in
                let text = try await client.scalar("SELECT text FROM analyst.feedback_text", as: String.self)
                let campaigns = try await client.scalar("SELECT count(*) FROM analyst.campaign_funnel", as: Int64.self)
                #expect(text == "seen by analysts")
                #expect(campaigns == 2)
                let statements = [
                    "SELECT token FROM devices",
                    "SELECT public_key FROM devices",
                    "SELECT * FROM replies",
                    "SELECT * FROM users",
                    "SELECT * FROM campaigns",
                    "INSERT INTO campaigns (name, kind, content) VALUES ('x', 'poster', '{}')",
                    "UPDATE campaigns SET status = 'paused'",
                    "DELETE FROM replies",
                    "INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at) VALUES (gen_random_uuid(), 1, 1, 1, 1, 'x', now())",
                    "CREATE TABLE analyst_owned (id int)",
                    "CREATE TABLE analyst.analyst_owned (id int)",
                    "DROP VIEW analyst.runs",
                ]
                #expect(await refused(client, statements) == statements)
            }
        }
    }

    @Test func theJobSendsButCannotCreateOrDropTablesAndArchivedCampaignsAreNeverSent() async throws {
        try await TestDatabase.with { admin, database in
            try await admin.exec(Fixtures.catalogue)
            try await admin.exec(Fixtures.audience(count: 40))
            try await admin.exec(Fixtures.campaign(name: "Live"))
            try await admin.exec(Fixtures.campaign(name: "Shelved"))
            try await admin.exec("UPDATE campaigns SET status = 'archived' WHERE name = 'Shelved'")
            try await withSimulator { sim in
                try await asMember(of: "herald_job", database: database, admin: admin) { client, config in
                    var configuration = try HeraldConfiguration(environment: [
                        "DATABASE_URL": "postgres://unused@127.0.0.1/unused", "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
                    ])
                    configuration.database = config
                    configuration.replySecret = abuseSecret
                    let summary = try await HeraldJob(configuration: configuration, logger: TestDatabase.logger)
                        .send(client: client, apns: sim.clientConfiguration)
                    #expect(summary.figures.sent == 40)
                    #expect(summary.campaigns.count == 1)

                    let statements = [
                        "CREATE TABLE job_owned (id int)",
                        "DROP TABLE deliveries",
                        "DROP TABLE campaigns",
                        "ALTER TABLE campaigns ADD COLUMN x int",
                        "TRUNCATE deliveries",
                        "DELETE FROM campaigns",
                        "DELETE FROM deliveries",
                        "UPDATE campaigns SET content = '{}'",
                        "INSERT INTO campaigns (name, kind, content) VALUES ('x', 'poster', '{}')",
                        "SELECT * FROM replies",
                        "INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at) VALUES (gen_random_uuid(), 1, 1, 1, 1, 'x', now())",
                        "UPDATE devices SET token = 'x'",
                        "CREATE FUNCTION job_owned() RETURNS int LANGUAGE sql AS 'SELECT 1'",
                    ]
                    #expect(await refused(client, statements) == statements)
                }
            }
            #expect(try await admin.scalar("SELECT count(*) FROM delivery_status d JOIN campaigns c ON c.id = d.campaign_id WHERE c.name = 'Shelved'", as: Int64.self) == 0)
            #expect(try await admin.scalar("SELECT status FROM campaigns WHERE name = 'Shelved'", as: String.self) == "archived")
        }
    }

    @Test func theJobDryRunsAsItsRole() async throws {
        try await TestDatabase.with { admin, database in
            try await admin.exec(Fixtures.catalogue)
            try await admin.exec(Fixtures.audience(count: 12))
            try await admin.exec(Fixtures.campaign(name: "Rehearsal"))
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("dry-\(UUID()).jsonl").path
            defer { try? FileManager.default.removeItem(atPath: out) }
            try await asMember(of: "herald_job", database: database, admin: admin) { client, config in
                var configuration = try HeraldConfiguration(environment: [
                    "DATABASE_URL": "postgres://unused@127.0.0.1/unused", "HERALD_SQL_DIR": TestDatabase.sqlDirectory.path,
                ])
                configuration.database = config
                configuration.replySecret = abuseSecret
                let summary = try await HeraldJob(configuration: configuration, logger: TestDatabase.logger).dryRun(client: client, out: out)
                #expect(summary.figures.targeted == 12)
            }
            #expect(try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n").count == 12)
        }
    }

    @Test func migrationsApplyAsANonSuperuserOwner() async throws {
        try await TestDatabase.with(migrated: false) { admin, database in
            let owner = "t_owner_" + UUID().uuidString.prefix(8).lowercased()
            let name = "t_owned_" + UUID().uuidString.prefix(8).lowercased()
            try await admin.exec("CREATE ROLE \(owner) LOGIN CREATEROLE NOSUPERUSER")
            try await admin.exec("CREATE DATABASE \(name) OWNER \(owner) TEMPLATE template0")
            var config = database.with(database: name)
            config.username = owner
            let outcome: Result<[String], any Error>
            do {
                outcome = .success(try await withPostgres(config, logger: TestDatabase.logger) { client in
                    try await Migrator(directory: TestDatabase.sqlDirectory).migrate(client: client, logger: TestDatabase.logger)
                })
            } catch {
                outcome = .failure(error)
            }
            try await admin.exec("DROP DATABASE \(name) WITH (FORCE)")
            try await admin.exec("DROP ROLE \(owner)")
            let applied = try outcome.get()
            #expect(applied.contains("0100_release_1_0_0.sql"))  // the baseline, which makes the roles
        }
    }
}
