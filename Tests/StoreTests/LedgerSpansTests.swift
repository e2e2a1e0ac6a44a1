import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport

/// The ledger by ranges in SQL (Sql/0044; docs/DESIGN.md, "The ledger by
/// ranges: spans and settlements"): the effective status, claims by span
/// with takeover at the watermark, settlements fenced by the span, the
/// release, and closing a cancelled campaign's rows no run holds.
@Suite("Ledger spans (SQL)")
struct LedgerSpansTests {
    /// The golden table of `herald_delivery_status` (DESIGN, "The effective
    /// status"): (stored status, id, its span's watermark or nil, the span
    /// held by a live run) → what every reader sees.
    static let golden: [(status: String, id: Int64, settled: Int64?, held: Bool, effective: String)] = [
        ("sent", 5, nil, false, "sent"),
        ("failed", 5, 9, true, "failed"),
        ("queued", 5, 9, false, "queued"),
        ("in_flight", 5, 2, true, "in_flight"),
        ("held_out", 5, nil, false, "held_out"),
        ("batch", 5, 5, false, "sent"),
        ("batch", 5, 9, true, "sent"),
        ("batch", 5, 4, true, "in_flight"),
        ("batch", 5, 4, false, "queued"),
        ("batch", 5, nil, false, "queued"),
    ]

    /// A claim passes every committed batch row below its bound: ids must be handed out in the
    /// order they are asked for (no session's cache of ids), so a row committed later is higher.
    @Test("deliveries_id_seq hands ids out one at a time")
    func idsInCallOrder() async throws {
        try await TestDatabase.with { client, _ in
            let cache = try await client.scalar("SELECT seqcache FROM pg_sequence WHERE seqrelid = 'deliveries_id_seq'::regclass",
                                                as: Int64.self)
            #expect(cache == 1)
        }
    }

    /// Sql/0046: a campaign row enters two indexes, `(id)` and the unique `(device_id, campaign_id)`;
    /// a campaign sent by ranges is written once, at fillfactor 100; one sent row by row keeps 40.
    @Test("a campaign row pays two index entries, and a campaign sent by ranges fills its pages")
    func theIndexSetOfRowsWrittenOnce() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue + ";\n" + Fixtures.audience(count: 12) + ";\n"
                + Fixtures.campaign(name: "Ranges") + ";\n" + Fixtures.campaign(name: "Rows"))
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            for (name, spans) in [("Ranges", true), ("Rows", false)] {
                let id = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = '\(name)'", as: Int64.self))
                _ = try await stores.audience.snapshot(try await stores.campaigns.loadCampaign(id), start: true, spans: spans)
                try await client.exec("ANALYZE deliveries_c\(id)")
                let rows = try await client.scalar("SELECT count(*) FROM deliveries_c\(id)", as: Int64.self)
                #expect(rows == 12)
                // Index tuples over every index of the partition, as ANALYZE counts them (exactly, at this size).
                let entries = try await client.scalar("""
                    SELECT sum(c.reltuples)::int8 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    WHERE i.indrelid = 'deliveries_c\(id)'::regclass
                    """, as: Int64.self)
                #expect(entries.map(Int.init) == 2 * 12, "\(name)")
                let options = try await client.scalar("""
                    SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = 'deliveries_c\(id)'::regclass
                    """, as: String.self)
                #expect(options == (spans ? "fillfactor=100" : "fillfactor=40"), "\(name)")
            }
            // A deleted device's rows go, whatever their kind.
            let device = try #require(try await client.scalar("SELECT min(device_id) FROM deliveries", as: Int64.self))
            try await client.exec("""
                INSERT INTO deliveries (kind, campaign_id, device_id, user_id, status)
                SELECT 'test', campaign_id, device_id, user_id, 'failed' FROM deliveries WHERE device_id = \(device) LIMIT 1
                """)
            try await client.exec("DELETE FROM devices WHERE id = \(device)")
            let left = try await client.scalar("SELECT count(*) FROM deliveries WHERE device_id = \(device)", as: Int64.self)
            #expect(left == 0)
        }
    }

    @Test("herald_delivery_status gives the golden table's statuses")
    func effectiveStatusGoldenTable() async throws {
        try await TestDatabase.with { client, _ in
            for row in Self.golden {
                let settled = row.settled.map(String.init) ?? "NULL"
                let got = try await client.scalar("""
                    SELECT herald_delivery_status('\(row.status)', \(row.id), \(settled)::bigint, \(row.held))
                    """, as: String.self)
                #expect(got == row.effective, "\(row)")
            }
        }
    }

    /// A campaign of `devices` rows written as the span path's snapshot writes them (`batch`), two of
    /// them deferred (`queued`, on the row path), and a running run.
    static func setUp(_ client: Database, devices: Int = 10) async throws -> (campaign: Int64, ids: [Int64]) {
        try await client.exec(Fixtures.catalogue + ";\n" + Fixtures.audience(count: devices) + ";\n"
            + Fixtures.campaign(name: "Poster"))
        let stores = RunStores(client: client, logger: TestDatabase.logger)
        let campaign = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Poster'", as: Int64.self))
        _ = try await stores.audience.snapshot(try await stores.campaigns.loadCampaign(campaign), start: true)
        try await client.exec("UPDATE deliveries SET status = 'batch' WHERE campaign_id = \(campaign) AND status = 'queued'")
        var ids: [Int64] = []
        for try await id in try await client.query(
            "SELECT id FROM deliveries WHERE campaign_id = \(campaign) ORDER BY id", logger: TestDatabase.logger).decode(Int64.self) {
            ids.append(id)
        }
        return (campaign, ids)
    }

    static func run(_ client: Database) async throws -> Int64 {
        try #require(try await client.scalar("INSERT INTO runs (host, pid) VALUES ('t', 1) RETURNING id", as: Int64.self))
    }

    struct Span: Equatable {
        var live: Bool
        var after: Int64?
        var through: Int64?
        var takenOver: Bool
    }

    static func claim(_ client: Database, campaign: Int64, run: Int64, n: Int) async throws -> Span {
        for try await (live, after, through, taken) in try await client.query(
            "SELECT * FROM herald_claim_span(\(campaign), \(run), \(Int32(n)), 60)", logger: TestDatabase.logger)
            .decode((Bool, Int64?, Int64?, Bool).self) {
            return Span(live: live, after: after, through: through, takenOver: taken)
        }
        Issue.record("herald_claim_span answered no row")
        return Span(live: false, takenOver: false)
    }

    struct Exception {
        var id: Int64
        var status: String
        var error = ""
        var delay = 0.0
        var device: Int64 = 0
    }

    /// One settlement of `run`: the spans (campaign, through) with their new watermarks, and the exceptions.
    @discardableResult
    static func settle(_ client: Database, run: Int64, campaign: Int64, spans: [(through: Int64, settled: Int64)],
                       exceptions: [Exception] = []) async throws -> [Int64: (held: Bool, written: Int)] {
        let devices = exceptions.map(\.device)
        var out: [Int64: (held: Bool, written: Int)] = [:]
        let rows = try await client.query("""
            SELECT through, held, exceptions FROM herald_settle(\(run),
                \(spans.map { _ in campaign })::bigint[], \(spans.map(\.through))::bigint[], \(spans.map(\.settled))::bigint[],
                \(exceptions.map { _ in campaign })::bigint[], \(exceptions.map(\.id))::bigint[], \(devices)::bigint[],
                \(exceptions.map(\.status))::text[], \(exceptions.map(\.error))::text[],
                \(exceptions.map { _ in Int32(1) })::int4[], \(exceptions.map(\.delay))::float8[],
                \(exceptions.map { _ in Date().timeIntervalSince1970 })::float8[])
            """, logger: TestDatabase.logger)
        for try await (through, held, written) in rows.decode((Int64, Bool, Int32).self) {
            out[through] = (held, Int(written))
        }
        return out
    }

    /// What every reader sees of the campaign's rows, by id.
    static func effective(_ client: Database, campaign: Int64) async throws -> [Int64: String] {
        var out: [Int64: String] = [:]
        for try await (id, status) in try await client.query(
            "SELECT id, status FROM delivery_status WHERE campaign_id = \(campaign)", logger: TestDatabase.logger)
            .decode((Int64, String).self) { out[id] = status }
        return out
    }

    @Test("claims advance over the batch rows in spans that never overlap; deferred rows stay on the row path")
    func claimsAdvanceInSpans() async throws {
        try await TestDatabase.with { client, _ in
            let (campaign, ids) = try await Self.setUp(client)
            // Two rows deferred (quiet hours, a pace): the row path's.
            try await client.exec("UPDATE deliveries SET status = 'queued' WHERE id IN (\(ids[2]), \(ids[3]))")
            let a = try await Self.run(client), b = try await Self.run(client)
            let first = try await Self.claim(client, campaign: campaign, run: a, n: 4)
            #expect(first == Span(live: true, after: 0, through: ids[5], takenOver: false))
            let second = try await Self.claim(client, campaign: campaign, run: b, n: 4)
            #expect(second == Span(live: true, after: ids[5], through: ids[9], takenOver: false))
            let third = try await Self.claim(client, campaign: campaign, run: a, n: 4)
            #expect(third == Span(live: true, after: nil, through: nil, takenOver: false), "nothing left to claim")
            let status = try await Self.effective(client, campaign: campaign)
            #expect(ids.filter { status[$0] == "in_flight" }.count == 8)
            #expect(status[ids[2]] == "queued" && status[ids[3]] == "queued")
            #expect(try await client.scalar("SELECT bool_and(claimed_by IS NOT NULL) FROM delivery_status WHERE status = 'in_flight'",
                                            as: Bool.self) == true)
            // A paused campaign claims nothing, and says so.
            try await client.exec("UPDATE campaigns SET status = 'paused' WHERE id = \(campaign)")
            let paused = try await Self.claim(client, campaign: campaign, run: b, n: 4)
            #expect(paused.live == false)
        }
    }

    @Test("a settlement moves the watermark and writes only what differs; readers see sent rows with the mark's time and the derived apns-id")
    func settlementsWriteOnlyWhatDiffers() async throws {
        try await TestDatabase.with { client, _ in
            let (campaign, ids) = try await Self.setUp(client)
            let run = try await Self.run(client)
            let span = try await Self.claim(client, campaign: campaign, run: run, n: 10)
            let through = try #require(span.through)
            let device = try #require(try await client.scalar("SELECT device_id FROM deliveries WHERE id = \(ids[1])", as: Int64.self))
            // Rows 0…5 settled: 1 refused (its token gone), 3 a 503 to retry, 5 a straggler; row 7 failed ahead of the watermark.
            let written = try await Self.settle(client, run: run, campaign: campaign, spans: [(through, ids[5])], exceptions: [
                Exception(id: ids[1], status: "invalid", error: "Unregistered", device: device),
                Exception(id: ids[3], status: "retry", error: "503 ServiceUnavailable", delay: 30),
                Exception(id: ids[5], status: "in_flight"),
                Exception(id: ids[7], status: "failed", error: "400 BadDeviceToken"),
            ])
            #expect(written[through]?.held == true && written[through]?.written == 4)
            var status = try await Self.effective(client, campaign: campaign)
            #expect([0, 2, 4].allSatisfy { status[ids[$0]] == "sent" })
            #expect(status[ids[1]] == "invalid" && status[ids[3]] == "queued" && status[ids[5]] == "in_flight")
            #expect(status[ids[7]] == "failed" && status[ids[6]] == "in_flight" && status[ids[9]] == "in_flight")
            // Of the settled rows only the four exceptions were written; the 200s stay batch rows.
            #expect(try await client.scalar("SELECT count(*) FROM deliveries WHERE campaign_id = \(campaign) AND status = 'batch'",
                                            as: Int64.self) == 6)
            #expect(try await client.scalar("""
                SELECT bool_and(s.sent_at = sp.marked_at[1] AND s.apns_id = herald_apns_id(s.id) AND s.attempts = 1)
                FROM delivery_status s, delivery_spans sp WHERE s.id IN (\(ids[0]), \(ids[2]), \(ids[4])) AND sp.campaign_id = \(campaign)
                """, as: Bool.self) == true)
            #expect(try await client.scalar("SELECT claimed_by FROM deliveries WHERE id = \(ids[5])", as: Int64.self) == run)
            #expect(try await client.scalar("SELECT not_before > now() + interval '20 seconds' FROM deliveries WHERE id = \(ids[3])",
                                            as: Bool.self) == true)
            // The device of the refused token is invalidated, as a row write does.
            #expect(try await client.scalar("SELECT invalidated_at IS NOT NULL FROM devices WHERE id = \(device)", as: Bool.self) == true)
            // A watermark never goes back; the second mark dates the rows it passed.
            try await Self.settle(client, run: run, campaign: campaign, spans: [(through, ids[2])])
            try await Self.settle(client, run: run, campaign: campaign, spans: [(through, through)])
            status = try await Self.effective(client, campaign: campaign)
            #expect([0, 2, 4, 6, 8, 9].allSatisfy { status[ids[$0]] == "sent" })
            #expect(try await client.scalar("SELECT settled FROM delivery_spans WHERE campaign_id = \(campaign)", as: Int64.self) == through)
            #expect(try await client.scalar("SELECT cardinality(marks) FROM delivery_spans WHERE campaign_id = \(campaign)", as: Int32.self) == 2)
            #expect(try await client.scalar("SELECT herald_batch_done(\(campaign))", as: Bool.self) == true)
        }
    }

    /// Sql/0047: a span's rows are read by their id range, one span at a time, not tested against
    /// every span of the campaign (0044's join, which a planner without statistics of the spans
    /// made a merge join on the campaign alone: minutes for a 1,000,000-row campaign). Counted by
    /// EXPLAIN ANALYZE, with a planner that avoids nested loops where it can.
    @Test("delivery_status reads each span's rows by range, testing no row against another span")
    func theViewReadsSpansByRange() async throws {
        try await TestDatabase.with { client, _ in
            let (campaign, ids) = try await Self.setUp(client, devices: 40)
            let run = try await Self.run(client)
            for _ in 0..<6 {
                let span = try await Self.claim(client, campaign: campaign, run: run, n: 5)
                let through = try #require(span.through), after = try #require(span.after)
                try await Self.settle(client, run: run, campaign: campaign, spans: [(through, after + 2)])
                try await Self.settle(client, run: run, campaign: campaign, spans: [(through, after + 3)])
            }
            #expect(ids.count == 40)
            try await client.exec("""
                CREATE FUNCTION herald_test_explain(q text) RETURNS text LANGUAGE plpgsql SET enable_nestloop = off AS $f$
                DECLARE plan text;
                BEGIN
                    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || q INTO plan;
                    RETURN plan;
                END $f$
                """)
            let plan = try #require(try await client.scalar("""
                SELECT herald_test_explain($$SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign) AND status <> 'skipped'$$)
                """, as: String.self))
            let tree = try JSONSerialization.jsonObject(with: Data(plan.utf8))
            func removedByJoinFilter(_ node: Any) -> Int {
                if let list = node as? [Any] { return list.map(removedByJoinFilter).reduce(0, +) }
                guard let dict = node as? [String: Any] else { return 0 }
                return (dict["Rows Removed by Join Filter"] as? Int ?? 0) + dict.values.map(removedByJoinFilter).reduce(0, +)
            }
            #expect(removedByJoinFilter(tree) == 0, "\(plan)")
            let counted = try await client.scalar("SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign)", as: Int64.self)
            #expect(counted == 40)
        }
    }

    @Test("a lapsed run's span is taken over at its watermark, and the lapsed run can settle nothing in it any more")
    func takeoverFencesTheLapsedRun() async throws {
        try await TestDatabase.with { client, _ in
            let (campaign, ids) = try await Self.setUp(client)
            let a = try await Self.run(client), b = try await Self.run(client)
            let span = try await Self.claim(client, campaign: campaign, run: a, n: 10)
            let through = try #require(span.through)
            try await Self.settle(client, run: a, campaign: campaign, spans: [(through, ids[3])])
            // While a's lease holds, b advances (there is nothing past a's span) and takes nothing over.
            #expect(try await Self.claim(client, campaign: campaign, run: b, n: 10).after == nil)
            try await client.exec("UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = \(a)")
            #expect(try await Self.effective(client, campaign: campaign)[ids[6]] == "queued", "a lapsed span's remainder is queued again")
            let taken = try await Self.claim(client, campaign: campaign, run: b, n: 10)
            #expect(taken == Span(live: true, after: ids[3], through: through, takenOver: true))
            // a wakes up: neither its watermark nor its exceptions are taken.
            let fenced = try await Self.settle(client, run: a, campaign: campaign, spans: [(through, ids[7])],
                                               exceptions: [Exception(id: ids[5], status: "failed", error: "late")])
            #expect(fenced[through]?.held == false && fenced[through]?.written == 0)
            #expect(try await client.scalar("SELECT settled FROM delivery_spans WHERE campaign_id = \(campaign)", as: Int64.self) == ids[3])
            #expect(try await client.scalar("SELECT status FROM deliveries WHERE id = \(ids[5])", as: String.self) == "batch")
            try await Self.settle(client, run: b, campaign: campaign, spans: [(through, through)])
            let status = try await Self.effective(client, campaign: campaign)
            #expect(ids.allSatisfy { status[$0] == "sent" })
        }
    }

    @Test("a released span is open at its watermark, and the next claim takes its remainder over")
    func releaseOpensTheSpan() async throws {
        try await TestDatabase.with { client, _ in
            let (campaign, ids) = try await Self.setUp(client)
            let a = try await Self.run(client), b = try await Self.run(client)
            let through = try #require(try await Self.claim(client, campaign: campaign, run: a, n: 6).through)
            try await Self.settle(client, run: a, campaign: campaign, spans: [(through, ids[1])])
            #expect(try await client.scalar("SELECT herald_release_spans(\(a))", as: Int64.self) == 0)
            #expect(try await Self.effective(client, campaign: campaign)[ids[2]] == "queued")
            #expect(try await Self.claim(client, campaign: campaign, run: b, n: 6)
                    == Span(live: true, after: ids[1], through: through, takenOver: true))
            #expect(try await client.scalar("SELECT herald_batch_done(\(campaign))", as: Bool.self) == false)
        }
    }

    @Test("a cancel closes the batch rows no live run holds; a held span's remainder is closed by its run's release")
    func cancelClosesWhatNoRunHolds() async throws {
        try await TestDatabase.with { client, _ in
            let (campaign, ids) = try await Self.setUp(client)
            let a = try await Self.run(client), b = try await Self.run(client)
            let first = try #require(try await Self.claim(client, campaign: campaign, run: a, n: 3).through)
            let second = try #require(try await Self.claim(client, campaign: campaign, run: b, n: 3).through)
            try await Self.settle(client, run: a, campaign: campaign, spans: [(first, ids[0])])
            try await Self.settle(client, run: b, campaign: campaign, spans: [(second, ids[4])])
            // b's session ended normally; a still sends.
            #expect(try await client.scalar("SELECT herald_release_spans(\(b))", as: Int64.self) == 0)
            try await client.exec("UPDATE campaigns SET status = 'cancelled' WHERE id = \(campaign)")
            var status = try await Self.effective(client, campaign: campaign)
            #expect(status[ids[0]] == "sent" && status[ids[1]] == "in_flight" && status[ids[2]] == "in_flight", "a's span is a's")
            #expect(status[ids[3]] == "sent" && status[ids[4]] == "sent" && status[ids[5]] == "cancelled")
            #expect(ids[6...].allSatisfy { status[$0] == "cancelled" }, "past every span")
            // a's claim finds the campaign cancelled; its release closes what it did not send.
            #expect(try await Self.claim(client, campaign: campaign, run: a, n: 3).live == false)
            try await Self.settle(client, run: a, campaign: campaign, spans: [(first, ids[1])])
            #expect(try await client.scalar("SELECT herald_release_spans(\(a))", as: Int64.self) == 1)
            status = try await Self.effective(client, campaign: campaign)
            #expect(status[ids[1]] == "sent" && status[ids[2]] == "cancelled")
            #expect(try await client.scalar("SELECT herald_batch_done(\(campaign))", as: Bool.self) == true)
        }
    }

    @Test("an archive closes the batch rows no live run holds, as it cancels queued rows")
    func archiveClosesWhatNoRunHolds() async throws {
        try await TestDatabase.with { client, _ in
            let (campaign, ids) = try await Self.setUp(client)
            let a = try await Self.run(client)
            let through = try #require(try await Self.claim(client, campaign: campaign, run: a, n: 4).through)
            try await Self.settle(client, run: a, campaign: campaign, spans: [(through, ids[1])])
            try await client.exec("UPDATE runs SET status = 'failed' WHERE id = \(a)")
            try await client.exec("UPDATE campaigns SET status = 'archived' WHERE id = \(campaign)")
            let status = try await Self.effective(client, campaign: campaign)
            #expect(status[ids[0]] == "sent" && status[ids[1]] == "sent")
            #expect(ids[2...].allSatisfy { status[$0] == "cancelled" })
            #expect(try await client.scalar("SELECT count(*) FROM deliveries WHERE last_error = 'campaign archived'", as: Int64.self) == 8)
        }
    }

    @Test("delivery_status gives every row once, with the status herald_delivery_status gives it and its mark's time")
    func theViewFollowsTheRule() async throws {
        try await TestDatabase.with { client, _ in
            let (campaign, ids) = try await Self.setUp(client, devices: 30)
            try await client.exec("UPDATE deliveries SET status = 'held_out' WHERE id IN (\(ids[3]), \(ids[27]))")
            let a = try await Self.run(client), b = try await Self.run(client), c = try await Self.run(client)
            let first = try #require(try await Self.claim(client, campaign: campaign, run: a, n: 10).through)
            let second = try #require(try await Self.claim(client, campaign: campaign, run: b, n: 10).through)
            let third = try #require(try await Self.claim(client, campaign: campaign, run: c, n: 4).through)
            try await Self.settle(client, run: a, campaign: campaign, spans: [(first, ids[2])],
                                  exceptions: [Exception(id: ids[1], status: "failed", error: "400 BadDeviceToken")])
            try await client.exec("SELECT pg_sleep(0.01)")
            try await Self.settle(client, run: a, campaign: campaign, spans: [(first, ids[6])])
            try await Self.settle(client, run: b, campaign: campaign, spans: [(second, ids[13])],
                                  exceptions: [Exception(id: ids[15], status: "in_flight")])
            try await client.exec("UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = \(b)")
            _ = third
            let wrong = try await client.scalar("""
                SELECT count(*) FROM deliveries d
                LEFT JOIN LATERAL (
                    SELECT sp.settled, herald_run_holds(sp.run_id) AS held,
                           (SELECT sp.marked_at[i] FROM generate_subscripts(sp.marks, 1) i WHERE sp.marks[i] >= d.id
                            ORDER BY i LIMIT 1) AS marked
                    FROM delivery_spans sp WHERE sp.campaign_id = d.campaign_id AND d.id > sp.after AND d.id <= sp.through
                ) s ON true
                FULL JOIN delivery_status v ON v.id = d.id
                WHERE (d.campaign_id = \(campaign) OR v.campaign_id = \(campaign))
                  AND (v.id IS NULL OR d.id IS NULL
                       OR v.status IS DISTINCT FROM herald_delivery_status(d.status, d.id, s.settled, s.held)
                       OR v.sent_at IS DISTINCT FROM CASE WHEN d.status = 'batch' AND d.id <= s.settled THEN s.marked
                                                          ELSE d.sent_at END)
                """, as: Int64.self)
            #expect(wrong == 0)
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign)", as: Int64.self) == 30)
            let status = try await Self.effective(client, campaign: campaign)
            #expect(status[ids[0]] == "sent" && status[ids[1]] == "failed" && status[ids[3]] == "held_out")
            #expect(status[ids[7]] == "in_flight" && status[ids[12]] == "sent" && status[ids[14]] == "queued")
            #expect(status[ids[15]] == "in_flight" && status[ids[21]] == "in_flight" && status[ids[29]] == "queued")
            // A sent row names the run that sent it, as a row write leaves claimed_by.
            #expect(try await client.scalar("SELECT claimed_by FROM delivery_status WHERE id = \(ids[0])", as: Int64.self) == a)
            #expect(try await client.scalar("SELECT claimed_by FROM delivery_status WHERE id = \(ids[12])", as: Int64.self) == b)
            // Two marks: the rows each passed carry its time.
            #expect(try await client.scalar("""
                SELECT count(DISTINCT sent_at) FROM delivery_status WHERE campaign_id = \(campaign) AND id <= \(ids[6]) AND status = 'sent'
                """, as: Int64.self) == 2)
        }
    }

    /// Sql/0048: a claim's takeover search and herald_batch_left read the campaign's open spans,
    /// not every span before them (counted by PostgreSQL in the transaction: tuples read from
    /// delivery_spans by index or by scan).
    @Test("a claim finds a campaign's open span without reading its settled ones")
    func theTakeoverSearchReadsOpenSpansOnly() async throws {
        try await TestDatabase.with { client, _ in
            let (campaign, _) = try await Self.setUp(client, devices: 10)
            let run = try await Self.run(client)
            // 2,000 settled spans, then one a gone run left open at its watermark.
            try await client.exec("""
                INSERT INTO delivery_spans (campaign_id, after, through, settled)
                SELECT \(campaign), 1000000000 + (g - 1) * 1000, 1000000000 + g * 1000, 1000000000 + g * 1000
                FROM generate_series(1, 2000) g;
                INSERT INTO delivery_spans (campaign_id, after, through, settled)
                VALUES (\(campaign), 1002000000, 1002001000, 1002000500);
                ANALYZE delivery_spans
                """)
            let logger = TestDatabase.logger
            let (span, read) = try await client.withTransaction(logger: logger) { conn -> (Span, Int64) in
                var span = Span(live: false, takenOver: false)
                for try await (live, after, through, taken) in try await conn.query(
                    "SELECT * FROM herald_claim_span(\(campaign), \(run), 5, 60)", logger: logger).decode((Bool, Int64?, Int64?, Bool).self) {
                    span = Span(live: live, after: after, through: through, takenOver: taken)
                }
                try await conn.query("SELECT herald_batch_left(\(campaign), true)", logger: logger)
                var read: Int64 = -1
                for try await n in try await conn.query("""
                    SELECT coalesce(t.seq_tup_read, 0) + coalesce(t.idx_tup_fetch, 0)
                    FROM pg_stat_xact_user_tables t WHERE t.relid = 'delivery_spans'::regclass
                    """, logger: logger).decode(Int64.self) { read = n }
                return (span, read)
            }
            #expect(span == Span(live: true, after: 1002000500, through: 1002001000, takenOver: true))
            #expect(read >= 0 && read < 20, "tuples of delivery_spans read by the claim and herald_batch_left: \(read)")
        }
    }

    @Test("a member of herald_job claims, settles and releases spans, and reads delivery_status")
    func theJobRoleDoesItAll() async throws {
        try await TestDatabase.with { admin, config in
            let (campaign, ids) = try await Self.setUp(admin)
            let run = try await Self.run(admin)
            try await withPostgres(try await TestDatabase.member(of: "herald_job", config), logger: TestDatabase.logger) { job in
                let through = try #require(try await Self.claim(job, campaign: campaign, run: run, n: 10).through)
                let written = try await Self.settle(job, run: run, campaign: campaign, spans: [(through, through)],
                                                    exceptions: [Exception(id: ids[4], status: "skipped", error: "user opted out")])
                #expect(written[through]?.written == 1)
                #expect(try await job.scalar("SELECT herald_release_spans(\(run))", as: Int64.self) == 0)
                #expect(try await job.scalar("SELECT count(*) FROM delivery_status WHERE campaign_id = \(campaign) AND status = 'sent'",
                                             as: Int64.self) == 9)
            }
        }
    }
}
