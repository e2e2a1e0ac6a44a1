import Foundation
import HeraldCore
import PostgresNIO
import Store
import Testing
import TestSupport

/// The ledger partitioned by campaign (Sql/0010) and `herald prune`.
@Suite("Partitioned ledger and prune")
struct PartitionTests {
    /// Four campaigns over 30 devices: two finished 100 days ago ("Old
    /// poster" with every status and reason and a test send, "Old feedback"
    /// with typed answers), one still running, one finished two days ago; replies
    /// (one to a test send) and config refresh pushes. Valid before and after 0010.
    static let history = Fixtures.catalogue + ";\n" + Fixtures.audience(count: 30) + ";\n"
        + Fixtures.campaign(name: "Old poster") + ";\n" + Fixtures.campaign(name: "Old feedback", kind: "feedback") + ";\n"
        + Fixtures.campaign(name: "Running") + ";\n" + Fixtures.campaign(name: "Recent") + ";\n" + """
        INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at, last_error, attempts, apns_id)
        SELECT c.id, d.id, d.user_id, s.status, CASE WHEN s.status = 'sent' THEN now() - interval '100 days' END, s.reason,
               1, gen_random_uuid()
        FROM campaigns c, devices d,
             LATERAL (SELECT (ARRAY['sent', 'sent', 'invalid', 'failed', 'skipped', 'cancelled'])[1 + d.id % 6] AS status,
                             (ARRAY[NULL, NULL, 'Unregistered', 'BadDeviceToken', 'frequency cap reached', 'campaign cancelled'])[1 + d.id % 6] AS reason) s
        WHERE c.name = 'Old poster';
        INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
        SELECT c.id, d.id, d.user_id, 'sent', now() - interval '100 days' FROM campaigns c, devices d WHERE c.name = 'Old feedback';
        INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
        SELECT c.id, d.id, d.user_id, CASE WHEN d.id % 2 = 0 THEN 'sent' ELSE 'queued' END,
               CASE WHEN d.id % 2 = 0 THEN now() END
        FROM campaigns c, devices d WHERE c.name = 'Running';
        INSERT INTO deliveries (campaign_id, device_id, user_id, status, sent_at)
        SELECT c.id, d.id, d.user_id, 'sent', now() - interval '2 days' FROM campaigns c, devices d WHERE c.name = 'Recent';
        INSERT INTO deliveries (kind, campaign_id, device_id, user_id, status, last_error, sent_at)
        SELECT 'test', c.id, d.id, d.user_id, 'sent', NULL, now() - interval '101 days'
        FROM campaigns c, devices d WHERE c.name IN ('Old poster', 'Running') AND d.id IN (1, 2);
        INSERT INTO config_documents (etag, locale, categories) VALUES ('"e1"', 'en', '{}');
        INSERT INTO deliveries (kind, config_etag, prompted_by, device_id, user_id, status, sent_at)
        SELECT 'config_refresh', '"e1"', c.id, d.id, d.user_id, 'sent', now() - interval '101 days'
        FROM campaigns c, devices d WHERE c.name = 'Old poster' AND d.id <= 5;
        INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at)
        SELECT gen_random_uuid(), dl.id, dl.campaign_id, dl.device_id, dl.user_id,
               CASE WHEN c.kind = 'feedback' THEN 'comment' WHEN dl.id % 3 = 0 THEN 'dont_care' ELSE 'love_it' END,
               CASE WHEN c.kind = 'feedback' THEN 'answer ' || dl.id END,
               now() - interval '99 days' + make_interval(mins => (dl.id % 7)::int)
        FROM deliveries dl JOIN campaigns c ON c.id = dl.campaign_id
        WHERE dl.status = 'sent' AND (dl.id % 2 = 0 OR dl.kind = 'test');
        UPDATE campaigns SET status = 'running', started_at = now() - interval '100 days', snapshot_at = now() - interval '100 days';
        UPDATE campaigns SET status = 'completed', completed_at = now() - interval '100 days' WHERE name LIKE 'Old %';
        UPDATE campaigns SET status = 'completed', completed_at = now() - interval '2 days' WHERE name = 'Recent';
        UPDATE deliveries SET updated_at = now() - interval '100 days'
        WHERE campaign_id IN (SELECT id FROM campaigns WHERE name LIKE 'Old %');
        UPDATE deliveries SET updated_at = now() - interval '2 days'
        WHERE campaign_id = (SELECT id FROM campaigns WHERE name = 'Recent');
        """

    /// Every row of every analyst view, as text, sorted: what analysts see.
    static func analystViews(_ client: Database) async throws -> [String: [String]] {
        var names: [String] = []
        for try await name in try await client.query(
            "SELECT table_name::text FROM information_schema.views WHERE table_schema = 'analyst' ORDER BY 1",
            logger: TestDatabase.logger).decode(String.self) {
            names.append(name)
        }
        var out: [String: [String]] = [:]
        for name in names {
            out[name] = try await lines(client, "SELECT t::text FROM analyst.\(name) t ORDER BY 1")
        }
        return out
    }

    static func lines(_ client: Database, _ sql: String) async throws -> [String] {
        var out: [String] = []
        for try await line in try await client.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).decode(String.self) {
            out.append(line)
        }
        return out
    }

    static func id(_ client: Database, campaign name: String) async throws -> Int64 {
        try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = '\(name)'", as: Int64.self))
    }

    @Test func migrationPartitionsAPopulatedLedgerKeepingEveryRowAndReply() async throws {
        let before = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sql-\(UUID())")
        try FileManager.default.createDirectory(at: before, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: before) }
        // The history (Sql/history/): the ledger as it was before 0010 partitioned it.
        let all = try Migrator(directory: TestDatabase.sqlHistoryDirectory).migrations()
        for m in all where m.name < "0010" {
            try FileManager.default.copyItem(at: TestDatabase.sqlHistoryDirectory.appendingPathComponent(m.name),
                                             to: before.appendingPathComponent(m.name))
        }
        // The schema as 0010 leaves it (later migrations change the ledger's columns and storage).
        let through = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sql-\(UUID())")
        try FileManager.default.createDirectory(at: through, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: through) }
        for m in all where m.name < "0011" {
            try FileManager.default.copyItem(at: TestDatabase.sqlHistoryDirectory.appendingPathComponent(m.name),
                                             to: through.appendingPathComponent(m.name))
        }
        try await TestDatabase.with(migrated: false) { client, _ in
            try await Migrator(directory: before).migrate(client: client, logger: TestDatabase.logger)
            try await client.exec(Self.history)
            // A storage parameter of the old table (a fillfactor) becomes every partition's.
            try await client.exec("ALTER TABLE deliveries SET (fillfactor = 70)")
            #expect(try await client.scalar("SELECT relkind::text FROM pg_class WHERE relname = 'deliveries'", as: String.self) == "r")
            let rows = try await Self.lines(client, "SELECT to_jsonb(d)::text FROM deliveries d ORDER BY id")
            let replies = try await Self.lines(client, "SELECT to_jsonb(r)::text FROM replies r ORDER BY id")
            let views = try await Self.analystViews(client)
            let lastID = try #require(try await client.scalar("SELECT max(id) FROM deliveries", as: Int64.self))
            #expect(rows.count == 129)  // 4 campaigns × 30 devices, 4 test sends, 5 config refreshes

            let applied = try await Migrator(directory: through).migrate(client: client, logger: TestDatabase.logger)
            #expect(applied.contains("0010_partitioned_deliveries.sql"))
            #expect(try await client.scalar("SELECT relkind::text FROM pg_class WHERE relname = 'deliveries'", as: String.self) == "p")
            // Every row where it was, each campaign in a partition of its own.
            #expect(try await Self.lines(client, "SELECT to_jsonb(d)::text FROM deliveries d ORDER BY id") == rows)
            #expect(try await Self.lines(client, "SELECT (to_jsonb(r) - 'delivery_kind')::text FROM replies r ORDER BY id") == replies)
            #expect(try await Self.analystViews(client) == views)
            let partitions = try await Self.lines(client, """
                SELECT c.relname || ':' || (SELECT count(*) FROM deliveries d WHERE d.tableoid = c.oid)
                FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'deliveries'::regclass ORDER BY 1
                """)
            var expected: [String] = ["deliveries_default:0", "deliveries_refresh:5"]
            for name in ["Old poster", "Old feedback", "Running", "Recent"] {
                let c = try await Self.id(client, campaign: name)
                expected.append("deliveries_c\(c):\(name == "Old poster" || name == "Running" ? 32 : 30)")
            }
            #expect(partitions.sorted() == expected.sorted())
            try await client.exec(Fixtures.campaign(name: "Later"))
            // 0010's own function (the Swift call passes 0046's second argument).
            _ = try await client.scalar("SELECT herald_delivery_partition(\(try await Self.id(client, campaign: "Later")))", as: Bool.self)
            #expect(try await Self.lines(client, """
                SELECT DISTINCT array_to_string(c.reloptions, ',') FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'deliveries'::regclass
                """) == ["fillfactor=70"])
            // The replies to test sends are marked so; the sequence goes on.
            #expect(try await client.scalar("SELECT count(*) FROM replies WHERE delivery_kind = 'test'", as: Int64.self) == 4)
            let next = try await client.scalar("""
                INSERT INTO deliveries (campaign_id, device_id, user_id)
                SELECT (SELECT id FROM campaigns WHERE name = 'Recent'), id, user_id FROM devices
                ON CONFLICT (campaign_id, device_id) WHERE kind = 'campaign' DO NOTHING
                RETURNING id
                """, as: Int64.self)
            #expect(next == nil)  // the one-delivery-per-device rule holds on the partitioned table
            let fresh = try #require(try await client.scalar("""
                INSERT INTO deliveries (kind, campaign_id, device_id, user_id, status)
                SELECT 'test', (SELECT id FROM campaigns WHERE name = 'Recent'), id, user_id, 'sent' FROM devices LIMIT 1
                RETURNING id
                """, as: Int64.self))
            #expect(fresh > lastID)
            // The later migrations apply over the partitioned ledger (0011, then 0012, set every partition's fillfactor).
            let later = try await Migrator(directory: TestDatabase.sqlHistoryDirectory).migrate(client: client, logger: TestDatabase.logger)
            #expect(!later.isEmpty && later.allSatisfy { $0 > "0010" })
            #expect(try await Self.lines(client, """
                SELECT DISTINCT array_to_string(c.reloptions, ',') FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'deliveries'::regclass
                """) == ["fillfactor=40"])
            #expect(try await Migrator(directory: TestDatabase.sqlHistoryDirectory).migrate(client: client, logger: TestDatabase.logger).isEmpty)
            // The 1.0.0 baseline (Sql/) finds the whole history there: adopted, not run; only
            // the migrations after it are.
            let current = Migrator(directory: TestDatabase.sqlDirectory)
            #expect(try await current.migrate(client: client, logger: TestDatabase.logger) == (try current.migrations().dropFirst().map(\.name)))
        }
    }

    @Test func aReplyToAnUnknownDeliveryIsRefused() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveries)
            do {
                try await client.exec("""
                    INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                    SELECT gen_random_uuid(), 999, campaign_id, device_id, user_id, 'love_it', now() FROM deliveries WHERE id = 1
                    """)
                Issue.record("a reply to delivery 999 was stored")
            } catch {
                #expect(StoreError.sqlState(of: error) == "23503")
            }
            // …and one naming the wrong campaign for its delivery.
            do {
                try await client.exec("""
                    INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, occurred_at)
                    SELECT gen_random_uuid(), 1, (SELECT id FROM campaigns WHERE name = 'Feedback'), device_id, user_id, 'love_it', now()
                    FROM deliveries WHERE id = 1
                    """)
                Issue.record("a reply naming another campaign was stored")
            } catch {
                #expect(StoreError.sqlState(of: error) == "23503")
            }
        }
    }

    @Test func aCampaignGetsItsPartitionAndKeepsItsRows() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.threeDeliveries)
            let poster = try await Self.id(client, campaign: "Poster")
            #expect(try await client.scalar("SELECT count(*) FROM deliveries_default WHERE campaign_id = \(poster)", as: Int64.self) == 2)
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            #expect(try await stores.audience.ensurePartition(campaign: poster))
            #expect(try await stores.audience.ensurePartition(campaign: poster))
            #expect(try await client.scalar("SELECT count(*) FROM deliveries_default WHERE campaign_id = \(poster)", as: Int64.self) == 0)
            #expect(try await client.scalar("SELECT count(*) FROM deliveries_c\(poster)", as: Int64.self) == 2)
            #expect(try await client.scalar("SELECT count(*) FROM deliveries WHERE campaign_id = \(poster)", as: Int64.self) == 2)
        }
    }

    @Test func theIntakeFindsDeliveriesThroughTheirIdRanges() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue + ";\n" + Fixtures.audience(count: 12) + ";\n"
                + Fixtures.campaign(name: "A") + ";\n" + Fixtures.campaign(name: "B", kind: "feedback"))
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let a = try await Self.id(client, campaign: "A")
            let b = try await Self.id(client, campaign: "B")
            #expect(try await stores.audience.snapshot(try await stores.campaigns.loadCampaign(a), start: true).inserted == 12)
            #expect(try await stores.audience.snapshot(try await stores.campaigns.loadCampaign(b), start: true).inserted == 12)
            // Each snapshot wrote its campaign's partition and the range of ids it used.
            #expect(try await client.scalar("SELECT count(*) FROM deliveries_c\(a)", as: Int64.self) == 12)
            #expect(try await Self.lines(client, """
                SELECT campaign_id || ':' || (upper(ids) - lower(ids)) FROM delivery_id_ranges ORDER BY campaign_id
                """) == ["\(a):12", "\(b):12"])
            // A row written by hand has no range and is found all the same.
            try await client.exec("""
                INSERT INTO deliveries (kind, campaign_id, device_id, user_id, status)
                SELECT 'test', \(a), id, user_id, 'sent' FROM devices ORDER BY id LIMIT 1
                """)
            let all = try await Self.lines(client, "SELECT id || ':' || campaign_id FROM deliveries ORDER BY id")
            let ids = all.compactMap { $0.split(separator: ":").first.flatMap { Int64($0) } }
            // The intake's lookup (herald_reply_targets, Sql/0015).
            let found = try await Self.lines(client, """
                SELECT id || ':' || campaign_id || ':' || coalesce(category_id, '-')
                FROM herald_reply_targets(ARRAY[\((ids + [999_999]).map(String.init).joined(separator: ","))]::bigint[])
                ORDER BY id
                """)
            #expect(found.count == 25)
            #expect(found.map { $0.split(separator: ":").prefix(2).joined(separator: ":") } == all)
            #expect(found[12].hasSuffix(":feedback.v1"))
        }
    }

    @Test func pruneDropsOldLedgersAndLeavesTheAnalystViewsAsTheyWere() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Self.history)
            let oldPoster = try await Self.id(client, campaign: "Old poster")
            let oldFeedback = try await Self.id(client, campaign: "Old feedback")
            let running = try await Self.id(client, campaign: "Running")
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            // Old poster and Running in partitions of their own; Old feedback's rows stay in the DEFAULT partition.
            #expect(try await stores.audience.ensurePartition(campaign: oldPoster))
            #expect(try await stores.audience.ensurePartition(campaign: running))
            let views = try await Self.analystViews(client)
            #expect(views["campaign_funnel"]?.count == 4)
            #expect(views["test_sends"]?.count == 4)
            #expect(views["feedback_text"]?.isEmpty == false)
            let replies = try await Self.lines(client, "SELECT to_jsonb(r)::text FROM replies r ORDER BY id")
            let runningRows = try await Self.lines(client, "SELECT to_jsonb(d)::text FROM deliveries d WHERE campaign_id = \(running) ORDER BY id")
            let prune = PruneStore(client: client, logger: TestDatabase.logger)

            // Older than 90 days: the two old campaigns, not the running one, not the recent one.
            let candidates = try await prune.candidates(olderThan: try PruneAge.parse("90d"))
            #expect(candidates.map(\.campaignID).sorted() == [oldPoster, oldFeedback].sorted())
            #expect(candidates.first { $0.campaignID == oldPoster }?.partition == "deliveries_c\(oldPoster)")
            #expect(candidates.first { $0.campaignID == oldFeedback }?.partition == nil)
            #expect(candidates.first { $0.campaignID == oldPoster }?.deliveries == 32)
            // Listing them (what --dry-run does) wrote nothing.
            #expect(try await client.scalar("SELECT count(*) FROM pruned_campaigns", as: Int64.self) == 0)
            #expect(try await client.scalar("SELECT count(*) FROM deliveries WHERE campaign_id = \(oldPoster)", as: Int64.self) == 32)
            // Not older than 200 days: nothing.
            #expect(try await prune.candidates(olderThan: .seconds(200 * 86400)).isEmpty)

            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-prune-\(UUID())")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            var dropped: [Int64: Int64] = [:]
            for c in candidates {
                guard case .pruned(let done) = try await prune.prune(c, exportDirectory: dir) else {
                    Issue.record("campaign \(c.campaignID) was not pruned")
                    continue
                }
                dropped[c.campaignID] = done.deliveries
                let file = try #require(done.exportedTo)
                let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
                #expect(Int64(lines.count) == done.deliveries)
                #expect(lines.allSatisfy { $0.contains("\"campaign_id\": \(c.campaignID),") })
            }
            #expect(dropped == [oldPoster: 32, oldFeedback: 30])

            // The ledgers are gone, the partition too; the views say what they said.
            #expect(try await client.scalar("SELECT count(*) FROM deliveries WHERE campaign_id IN (\(oldPoster), \(oldFeedback))", as: Int64.self) == 0)
            #expect(try await client.scalar("SELECT to_regclass('deliveries_c\(oldPoster)') IS NULL", as: Bool.self) == true)
            #expect(try await Self.analystViews(client) == views)
            // Replies all there, still readable with their campaign, device and user.
            #expect(try await Self.lines(client, "SELECT to_jsonb(r)::text FROM replies r ORDER BY id") == replies)
            #expect(try await client.scalar("""
                SELECT count(*) FROM replies r JOIN users u ON u.id = r.user_id JOIN devices dv ON dv.id = r.device_id
                WHERE r.campaign_id = \(oldFeedback) AND r.text IS NOT NULL
                """, as: Int64.self) == 15)
            // The running campaign is untouched.
            #expect(try await Self.lines(client, "SELECT to_jsonb(d)::text FROM deliveries d WHERE campaign_id = \(running) ORDER BY id") == runningRows)
            // A pruned delivery is unknown to the intake; its campaign takes no test sends.
            let prunedDelivery = try #require(try await client.scalar(
                "SELECT delivery_id FROM replies WHERE campaign_id = \(oldPoster) ORDER BY id LIMIT 1", as: Int64.self))
            #expect(try await client.scalar("SELECT count(*) FROM herald_reply_targets(ARRAY[\(prunedDelivery)]::bigint[])",
                                            as: Int64.self) == 0)
            await #expect(throws: (any Error).self) { try await stores.audience.ensurePartition(campaign: oldPoster) }

            // A second prune finds nothing to do.
            #expect(try await prune.candidates(olderThan: .seconds(90 * 86400)).isEmpty)
            #expect(try await prune.prune(candidates[0], exportDirectory: nil) == .left(reason: "it was pruned already"))
            #expect(try await Self.analystViews(client) == views)
            // The running campaign goes on: its queued half is claimable.
            let run = try #require(try await client.scalar("INSERT INTO runs (host, pid) VALUES ('t', 1) RETURNING id", as: Int64.self))
            #expect(try await stores.ledger.claim(campaign: running, run: run, limit: 100, lease: .seconds(60)).count == 15)
        }
    }

    @Test func theFrequencyWindowBoundsAPrune() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Self.history)
            // A campaign of two days ago may go, unless the frequency cap still counts its sends.
            #expect(try await PruneStore(client: client, logger: TestDatabase.logger).candidates(olderThan: .seconds(3600))
                .map(\.campaignID).contains(try await Self.id(client, campaign: "Recent")))
            try await client.exec("UPDATE settings SET frequency_window = '3 days'")
            #expect(try await !PruneStore(client: client, logger: TestDatabase.logger).candidates(olderThan: .seconds(3600))
                .map(\.campaignID).contains(try await Self.id(client, campaign: "Recent")))
        }
    }

    @Test func ageParsing() throws {
        #expect(try PruneAge.parse("90d") == .seconds(90 * 86400))
        #expect(try PruneAge.parse("12h") == .seconds(12 * 3600))
        #expect(try PruneAge.parse("2w") == .seconds(14 * 86400))
        for bad in ["", "d", "90", "-1d", "0d", "1.5d", "90 days", "9y"] {
            #expect(throws: InputError.self) { try PruneAge.parse(bad) }
        }
    }
}
