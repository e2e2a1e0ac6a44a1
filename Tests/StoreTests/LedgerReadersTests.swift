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
                SELECT count(*) FROM (\(AudienceStore.cappedUsers(when: "true"))) c
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
            let cappedByRanges = try await client.scalar("SELECT count(*) FROM (\(AudienceStore.cappedUsers(when: "true"))) c",
                                                         as: Int64.self)
            #expect(cappedByRanges == cappedByRows && cappedByRows == sent && (sent ?? 0) > 30, "the users the frequency cap counts")
        }
    }
}
