import Foundation
import PostgresNIO
@testable import Store
import Testing
import TestSupport

/// The readers of the ledger give the same answers whether a campaign's
/// deliveries were written row by row or by ranges (Sql/0044, 0045; docs/DESIGN.md,
/// "The ledger by ranges"): one ledger is read, then rewritten as the span
/// path would have left it (its sent rows batch rows, passed by a span's
/// marks at their times), and read again.
@Suite("Ledger readers, rows against ranges")
struct LedgerReadersTests {
    /// The analysts' views that read the ledger.
    static let views = [
        "analyst.campaign_funnel", "analyst.apps", "analyst.delivery_confirmation", "analyst.pace",
        "analyst.variant_comparison", "analyst.delivery_problems", "analyst.lift",
    ]

    /// Every view's rows, as sorted JSON.
    static func read(_ client: Database) async throws -> [String: String] {
        var out: [String: String] = [:]
        for view in views {
            out[view] = try await client.scalar(
                "SELECT coalesce(jsonb_agg(to_jsonb(v) ORDER BY to_jsonb(v)::text), '[]')::text FROM \(view) v", as: String.self)
        }
        return out
    }

    /// The campaign's sent rows become batch rows under one span whose marks pass each at its time.
    static func rewriteAsSpans(_ client: Database, campaign: Int64) async throws {
        try await client.exec("""
            INSERT INTO delivery_spans (campaign_id, after, through, settled, marks, marked_at, marked_by)
            SELECT \(campaign), 0, (SELECT max(id) FROM deliveries WHERE campaign_id = \(campaign)), max(id),
                   array_agg(id ORDER BY id), array_agg(sent_at ORDER BY id), array_agg(claimed_by ORDER BY id)
            FROM deliveries WHERE campaign_id = \(campaign) AND status = 'sent';
            UPDATE deliveries SET status = 'batch', sent_at = NULL, apns_id = NULL, attempts = 0
            WHERE campaign_id = \(campaign) AND status = 'sent'
            """)
    }

    @Test("the analysts' views, the prune's counts and the frequency cap read a ledger by ranges as the same ledger by rows")
    func sameAnswers() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue + ";\n" + Fixtures.audience(count: 60) + ";\n"
                + Fixtures.campaign(name: "Poster"))
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let campaign = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Poster'", as: Int64.self))
            _ = try await stores.audience.snapshot(try await stores.campaigns.loadCampaign(campaign), start: true)
            // A ledger as a run leaves it: most rows sent over a few minutes, some refused, skipped, held out or still queued.
            try await client.exec("""
                UPDATE deliveries SET status = CASE WHEN id % 13 = 0 THEN 'failed' WHEN id % 11 = 0 THEN 'invalid'
                                                    WHEN id % 7 = 0 THEN 'skipped' WHEN id % 17 = 0 THEN 'held_out'
                                                    WHEN id % 19 = 0 THEN 'queued' ELSE 'sent' END,
                    last_error = CASE WHEN id % 13 = 0 THEN '400 BadDeviceToken' WHEN id % 11 = 0 THEN '410 Unregistered'
                                      WHEN id % 7 = 0 THEN 'user opted out' END
                WHERE campaign_id = \(campaign);
                UPDATE deliveries SET sent_at = now() - make_interval(mins => (id % 4)::int), attempts = 1,
                    apns_id = herald_apns_id(id)
                WHERE campaign_id = \(campaign) AND status = 'sent';
                UPDATE campaigns SET status = 'running' WHERE id = \(campaign);
                UPDATE settings SET frequency_cap = 1, frequency_window = interval '1 day';
                INSERT INTO receipts (delivery_id, campaign_id, device_id, arrived_at)
                SELECT id, campaign_id, device_id, sent_at + interval '2 seconds' FROM deliveries
                WHERE campaign_id = \(campaign) AND status = 'sent' AND id % 3 = 0
                """)
            let rows = try await Self.read(client)
            let byRows = try await client.scalar("""
                SELECT jsonb_agg(to_jsonb(x) ORDER BY to_jsonb(x)::text)::text FROM (
                    SELECT status, last_error, count(*) AS n, min(sent_at) AS first, max(sent_at) AS last
                    FROM deliveries WHERE campaign_id = \(campaign) GROUP BY status, last_error) x
                """, as: String.self)
            let cappedByRows = try await client.scalar("""
                SELECT count(*) FROM (\(try AudienceStore.cappedUsers(when: "true"))) c
                """, as: Int64.self)

            let sent = try await client.scalar("SELECT count(*) FROM deliveries WHERE campaign_id = \(campaign) AND status = 'sent'",
                                               as: Int64.self)
            try await Self.rewriteAsSpans(client, campaign: campaign)
            #expect(try await client.scalar("SELECT count(*) FROM deliveries WHERE campaign_id = \(campaign) AND status = 'sent'",
                                            as: Int64.self) == 0)
            let ranges = try await Self.read(client)
            for view in Self.views {
                #expect(ranges[view] == rows[view], "\(view)")
            }
            let byRanges = try await client.scalar("""
                SELECT jsonb_agg(to_jsonb(x) ORDER BY to_jsonb(x)::text)::text FROM (
                    SELECT status, last_error, count(*) AS n, min(sent_at) AS first, max(sent_at) AS last
                    FROM delivery_status WHERE campaign_id = \(campaign) GROUP BY status, last_error) x
                """, as: String.self)
            #expect(byRanges == byRows, "the prune's counts by status")
            let cappedByRanges = try await client.scalar("SELECT count(*) FROM (\(try AudienceStore.cappedUsers(when: "true"))) c",
                                                         as: Int64.self)
            #expect(cappedByRanges == cappedByRows && cappedByRows == sent && (sent ?? 0) > 30, "the users the frequency cap counts")
        }
    }

    /// The columns a batch row leaves to its span (DESIGN, "The effective status").
    static let derivedColumns = ["status", "sent_at", "apns_id", "attempts"]

    /// The views and SQL-bodied functions that may read those columns of `deliveries` itself, and
    /// why what they read there is the row's effective value.
    static let rawReadersInSQL: [String: String] = [
        "view public.delivery_status": "the one rule's view",
        "view analyst.delivery_problems": "refusals, skips and cancels: written on the row, never a batch row's effective status",
        "view analyst.lift": "held_out against the rest: written by the snapshot on the row",
        "view analyst.config_refreshes": "config refreshes: never sent by ranges",
        "view analyst.test_sends": "test sends: never sent by ranges",
        "function public.herald_batch_left": "the spans' own count of batch rows",
    ]

    /// Fails when a view or function that PostgreSQL knows to read `deliveries.status` (or `sent_at`,
    /// `apns_id`, `attempts`) is not `delivery_status` or named above with its reason: a new analyst
    /// view reading the raw column would count a campaign sent by ranges as queued.
    @Test("no view or SQL function reads a ledger row's raw status unless it is named with why that is its effective one")
    func rawStatusReadersInSQL() async throws {
        try await TestDatabase.with { client, _ in
            let rows = try await client.query("""
                SELECT DISTINCT CASE WHEN v.oid IS NOT NULL THEN 'view ' || nv.nspname || '.' || v.relname
                                     ELSE 'function ' || np.nspname || '.' || p.proname END, a.attname::text
                FROM pg_depend d
                JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                LEFT JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
                LEFT JOIN pg_class v ON v.oid = r.ev_class
                LEFT JOIN pg_namespace nv ON nv.oid = v.relnamespace
                LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
                LEFT JOIN pg_namespace np ON np.oid = p.pronamespace
                WHERE d.refobjid = 'public.deliveries'::regclass AND a.attname::text = ANY (\(Self.derivedColumns))
                  AND (v.oid IS NOT NULL OR p.oid IS NOT NULL)
                """, logger: TestDatabase.logger)
            var readers: [String: Set<String>] = [:]
            for try await (reader, column) in rows.decode((String, String).self) { readers[reader, default: []].insert(column) }
            for (reader, columns) in readers.sorted(by: { $0.key < $1.key }) {
                #expect(Self.rawReadersInSQL[reader] != nil,
                        "\(reader) reads deliveries.\(columns.sorted().joined(separator: ", ")) itself: read delivery_status, or name it here with why")
            }
            // Each named reader still exists, so a renamed one does not leave its reason behind.
            for reader in Self.rawReadersInSQL.keys.sorted() { #expect(readers[reader] != nil, "\(reader) no longer reads the ledger") }
        }
    }

    /// The plpgsql functions (whose bodies `pg_depend` does not see) that read or write `deliveries`
    /// and name a column a span decides, each with why its raw value is the effective one.
    static let rawReadersInPlpgsql: [String: String] = [
        "herald_campaign_archive": "an archive closes the row path's queued rows; batch rows through herald_close_batch",
        "herald_campaign_cancelled": "a cancel closes the row path's queued rows; batch rows through herald_close_batch",
        "herald_campaign_delete_check": "reads no status of a row: the word is in its hint, about the campaign",
        "herald_claim_span": "a span's claim reads its own batch rows, whose raw status is batch",
        "herald_close_batch": "closes batch rows no live run holds: their raw status is batch",
        "herald_journey_closed": "a journey's messages are sent row by row (their rows are written by members' moves, never by ranges): closing cancels their queued rows",
        "herald_pace_reserve": "a paced campaign's queued rows: a paced campaign is never sent by ranges",
    ]

    /// Finds, in the body of every plpgsql function, a read or write of `deliveries` (the table, not
    /// `delivery_status`) beside a column a span decides; fails on a new one until it is named above.
    @Test("no plpgsql function reads a ledger row's raw status unless it is named with why that is its effective one")
    func rawStatusReadersInPlpgsql() async throws {
        try await TestDatabase.with { client, _ in
            let columns = Self.derivedColumns.joined(separator: "|")
            var found: Set<String> = []
            for try await name in try await client.query("""
                SELECT p.proname::text FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE l.lanname = 'plpgsql' AND n.nspname IN ('public', 'analyst')
                  AND p.prosrc ~* '\\m(FROM|JOIN|UPDATE|INTO)\\s+(ONLY\\s+)?(public\\.)?deliveries\\M(?!_)'
                  AND p.prosrc ~ ('\\m(' || \(columns) || ')\\M')
                """, logger: TestDatabase.logger).decode(String.self) {
                found.insert(name)
            }
            #expect(found.contains("herald_claim_span"), "the scan finds a known reader: \(found.sorted())")
            for name in found.sorted() {
                #expect(Self.rawReadersInPlpgsql[name] != nil,
                        "\(name) reads deliveries' raw status or sent_at in its body: read delivery_status, or name it here with why")
            }
            for name in Self.rawReadersInPlpgsql.keys.sorted() { #expect(found.contains(name), "\(name) no longer reads the ledger") }
        }
    }

    /// The statements in Sources and Sql/queries that read those columns of `deliveries` itself, by
    /// file: how many, and why each reads the row's own value.
    static let rawReadersInSwift: [String: (statements: Int, why: String)] = [
        "Sql/queries/ledger.sql": (4, "the row path's claim, its next due row and personal values: queued and in-flight rows; a span's read of its own batch rows"),
        "Sql/queries/config-refresh.sql": (2, "config refreshes: never sent by ranges"),
        "Sql/queries/campaigns.sql": (1, "completion: the row path's queued and in-flight rows, and herald_batch_done's for batch rows"),
        "Sql/queries/audience.sql": (1, "a series' earlier rows on segment entry: every row but a skipped one, whatever the span says"),
        "Sql/queries/prune.sql": (1, "the lift's arms: held_out, written on the row"),
        "Sql/queries/widgets.sql": (1, "a widget's audience: statuses a batch row never takes"),
        "Sql/queries/demo.sql": (1, "the demo's arms: held_out, written on the row"),
    ]

    /// Counts, in every SQL literal of Sources and every statement of Sql/queries, the statements
    /// that read `deliveries` (the table, not `delivery_status`) and name one of the columns a span
    /// decides; fails on a new one until it is named above with its reason.
    @Test("no statement in Sources or Sql/queries reads a ledger row's raw status unless its file names why that is its effective one")
    func rawStatusReadersInSwift() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let sources = repository.appendingPathComponent("Sources")
        let table = try NSRegularExpression(pattern: #"\b(FROM|JOIN)\s+(ONLY\s+)?deliveries\b(?!_)"#)
        let column = try NSRegularExpression(pattern: #"\b(\#(Self.derivedColumns.joined(separator: "|")))\b"#)
        var found: [String: Int] = [:]
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        #expect(!files.isEmpty)
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            // The SQL: the odd pieces between multi-line string delimiters.
            let pieces = text.components(separatedBy: "\"\"\"")
            for (i, sql) in pieces.enumerated() where i % 2 == 1 {
                let range = NSRange(sql.startIndex..., in: sql)
                if table.firstMatch(in: sql, range: range) != nil, column.firstMatch(in: sql, range: range) != nil {
                    let name = file.path.replacingOccurrences(of: sources.path + "/", with: "")
                    found[name, default: 0] += 1
                }
            }
        }
        let queries = repository.appendingPathComponent("Sql/queries")
        for name in try FileManager.default.contentsOfDirectory(atPath: queries.path) where name.hasSuffix(".sql") {
            let text = try String(contentsOf: queries.appendingPathComponent(name), encoding: .utf8)
            // A statement: from one `-- name:` line to the next.
            for sql in text.components(separatedBy: "-- name:").dropFirst() {
                let range = NSRange(sql.startIndex..., in: sql)
                if table.firstMatch(in: sql, range: range) != nil, column.firstMatch(in: sql, range: range) != nil {
                    found["Sql/queries/" + name, default: 0] += 1
                }
            }
        }
        for (file, n) in found.sorted(by: { $0.key < $1.key }) {
            #expect(n == Self.rawReadersInSwift[file]?.statements,
                    "\(file): \(n) statements read deliveries' status or sent_at itself: read delivery_status, or name them with why")
        }
        for file in Self.rawReadersInSwift.keys.sorted() { #expect(found[file] != nil, "\(file) no longer reads the ledger") }
    }
}
