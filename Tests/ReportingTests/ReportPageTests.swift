import Foundation
import PostgresNIO
import Reporting
import Store
import Testing
import TestSupport

/// `herald report --html`: the page shows what the analyst views say.
@Suite("HTML report")
struct ReportPageTests {
    /// 30 devices targeted by a feedback campaign: 24 sent, 3 invalid, 3
    /// still queued; replies from 12 devices over three hours, 8 of them typed.
    static let history = """
        UPDATE deliveries SET status = 'sent', sent_at = now() WHERE id IN (SELECT id FROM delivery_status ORDER BY id LIMIT 24);
        UPDATE deliveries SET status = 'invalid', last_error = 'Unregistered'
            WHERE id IN (SELECT id FROM delivery_status WHERE status = 'queued' ORDER BY id LIMIT 3);
        INSERT INTO replies (reply_id, delivery_id, campaign_id, device_id, user_id, action, text, occurred_at)
        SELECT gen_random_uuid(), d.id, d.campaign_id, d.device_id, d.user_id,
               CASE WHEN n <= 8 THEN 'comment' ELSE 'dont_care' END,
               CASE WHEN n = 1 THEN '<script>alert("x")</script> & more'
                    WHEN n <= 8 THEN 'answer number ' || n END,
               timestamptz '2026-11-20 10:15:00+00' + make_interval(hours => (n % 3)::int)
        FROM (SELECT d.*, row_number() OVER (ORDER BY d.id) AS n FROM delivery_status d WHERE d.status = 'sent') d
        WHERE n <= 12;
        """

    @Test func theFiguresAreTheAnalystViewsFigures() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 30))
            try await client.exec(Fixtures.campaign(name: "Survey", kind: "feedback"))
            try await client.exec("""
                INSERT INTO deliveries (campaign_id, device_id, user_id)
                SELECT (SELECT id FROM campaigns), d.id, d.user_id FROM devices d
                """)
            try await client.exec(Self.history)
            let report = AnalystReport(client: client, logger: TestDatabase.logger)
            let data = try await report.data(feedbackLimit: 5)
            let c = try #require(data.campaigns.first)
            #expect(data.campaigns.count == 1)
            #expect(c.targeted == 30 && c.sent == 24 && c.invalid == 3 && c.pending == 3)
            #expect(c.targeted == (try await client.scalar("SELECT targeted FROM analyst.campaign_funnel", as: Int64.self)))
            #expect(c.replies == 12 && c.respondingDevices == 12)
            #expect(c.responseRatePct == (try await client.scalar("SELECT response_rate_pct::float8 FROM analyst.campaign_funnel", as: Double.self)))
            #expect(c.actions.map(\.action) == ["comment", "dont_care"])
            #expect(c.actions.map(\.replies) == [8, 4])
            #expect(c.timeline.map(\.replies).reduce(0, +) == 12)
            #expect(c.timeline.count == 3)
            #expect(ReportPage.html(data).contains("one column a 5 minutes"))
            #expect(c.feedbackTotal == 8 && c.feedback.count == 5)

            let page = ReportPage.html(data)
            #expect(page.contains("Survey"))
            #expect(page.contains(">24<") && page.contains(">30<"))
            #expect(page.contains("the 5 most recent of 8"))
            // The typed text is shown, escaped: it cannot run in the reader's browser.
            #expect(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more"))
            #expect(!page.contains("<script>alert"))
            // Self-contained: nothing is loaded from elsewhere.
            #expect(!page.contains("src=") && !page.contains("href=") && !page.contains("@import"))

            // One campaign only, and an unknown one.
            #expect(try await report.data(campaign: c.id).campaigns.count == 1)
            #expect(try await report.data(campaign: c.id + 1000).campaigns.isEmpty)
        }
    }

    @Test func anEmptyDatabaseGivesAPageThatSaysSo() {
        let page = ReportPage.html(ReportData(generatedAt: Date(timeIntervalSince1970: 0), campaigns: []))
        #expect(page.contains("No campaigns yet."))
        #expect(page.contains("1970-01-01 00:00"))
    }

    @Test func escapingCoversMarkupQuotesAndControlCharacters() {
        #expect(ReportPage.escape("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&#39;")
        #expect(ReportPage.escape("x\u{0}y\u{7F}z\n") == "x\u{FFFD}y\u{FFFD}z\n")
        #expect(ReportPage.escape("配送が遅かった") == "配送が遅かった")
    }
}
