import Foundation
import PostgresNIO
import Reporting
import Runner
import Store
import Testing
import TestSupport

/// Recurring campaigns and campaigns sent on segment entry (Sql/0023), with
/// real runs against PostgreSQL and the simulator. Time passing is
/// simulated by moving the series' own moments back (send_at, resumed_at,
/// and on entry the ledger's created_at), as the clock cannot be moved.
@Suite("Recurring and on-entry campaigns", .serialized)
struct SeriesRunTests {
    /// An hourly series whose second moment came 30 min ago (the first, 90 min ago).
    func hourly(_ client: Database, devices: Int = 12) async throws -> Int64 {
        try await client.exec(Fixtures.catalogue)
        try await client.exec(Fixtures.audience(count: devices))
        try await client.exec(Fixtures.campaign(name: "Weekly poster"))
        try await client.exec("""
            UPDATE campaigns SET repeat_unit = 'hour', send_at = date_trunc('minute', now()) - interval '90 minutes'
            """)
        return try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Weekly poster'", as: Int64.self))
    }

    /// The series' clock moves `minutes` on.
    func pass(_ minutes: Int, series: Int64, _ client: Database) async throws {
        try await client.exec("""
            UPDATE campaigns SET send_at = send_at - interval '\(minutes) minutes',
                                 expires_at = expires_at - interval '\(minutes) minutes',
                                 resumed_at = resumed_at - interval '\(minutes) minutes'
            WHERE id = \(series)
            """)
    }

    func occurrences(_ series: Int64, _ client: Database) async throws -> [(occurrence: Int, sent: Int, targeted: Int)] {
        var out: [(Int, Int, Int)] = []
        for try await (n, sent, targeted) in try await client.query("""
            SELECT occurrence, sent, targeted FROM analyst.occurrences WHERE series_id = \(series) ORDER BY occurrence
            """).decode((Int32, Int64, Int64).self) {
            out.append((Int(n), Int(sent), Int(targeted)))
        }
        return out
    }

    @Test func anOccurrenceIsSentOnceHoweverManyRunsSeeItDue() async throws {
        try await TestDatabase.with { client, _ in
            // A window of an hour from each moment (expires_at − send_at).
            let series = try await hourly(client)
            try await client.exec("UPDATE campaigns SET expires_at = send_at + interval '1 hour' WHERE id = \(series)")
            try await withSimulator { sim in
                // Two runs at once, then three more: one occurrence, each device once.
                async let a = sendRun(client, apns: sim.clientConfiguration)
                async let b = sendRun(client, apns: sim.clientConfiguration)
                let (first, second) = try await (a, b)
                #expect(first.series.made.count + second.series.made.count == 1)
                for _ in 0..<3 {
                    let again = try await sendRun(client, apns: sim.clientConfiguration)
                    #expect(again.series.made.isEmpty && again.figures.sent == 0)
                }
                let tokens = await sim.simulator.accepted.map(\.deviceToken)
                #expect(tokens.count == 12 && Set(tokens).count == 12)
            }
            // The latest moment (the second) was made; the first was overtaken.
            let made = try await occurrences(series, client)
            #expect(made.map(\.occurrence) == [2] && made.first?.sent == 12)
            #expect(try await client.scalar("""
                SELECT send_at = (SELECT send_at FROM campaigns WHERE id = \(series)) + interval '1 hour'
                   AND expires_at = send_at + interval '1 hour' AND name = 'Weekly poster #2'
                FROM campaigns WHERE series_id = \(series)
                """, as: Bool.self) == true)
            // The series itself is never sent, and stays running for the next moment.
            #expect(try await client.scalar("SELECT status FROM campaigns WHERE id = \(series)", as: String.self) == "running")
            #expect(try await client.scalar("SELECT count(*) FROM delivery_status WHERE campaign_id = \(series)", as: Int64.self) == 0)
        }
    }

    @Test func eachOccurrenceHasItsOwnAudienceAndFigures() async throws {
        try await TestDatabase.with { client, _ in
            let series = try await hourly(client, devices: 10)
            try await client.exec("UPDATE campaigns SET repeat_count = 4 WHERE id = \(series)")
            try await withSimulator { sim in
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                // Between occurrences: two users opt out, three new ones register.
                try await client.exec("UPDATE users SET opted_out_at = now() WHERE id IN (SELECT id FROM users ORDER BY id LIMIT 2)")
                try await client.exec("""
                    INSERT INTO users (external_id, time_zone) SELECT 'late' || n, 'UTC' FROM generate_series(1, 3) n;
                    INSERT INTO devices (user_id, token, environment)
                    SELECT id, lpad(to_hex(id + 5000), 64, '0'), 'production' FROM users WHERE external_id LIKE 'late%'
                    """)
                try await pass(60, series: series, client)
                let next = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(next.series.made.count == 1 && next.figures.sent == 11)
                // The third and last moment ends the series.
                try await pass(60, series: series, client)
                let last = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(last.series.made.count == 1 && last.series.completed == 1)
                #expect(await sim.simulator.accepted.count == 10 + 11 + 11)
            }
            let made = try await occurrences(series, client)
            #expect(made.map(\.occurrence) == [2, 3, 4])
            #expect(made.map(\.sent) == [10, 11, 11])
            #expect(try await client.scalar("SELECT status FROM campaigns WHERE id = \(series)", as: String.self) == "completed")
            #expect(try await client.scalar("""
                SELECT occurrences = 3 AND sent_total = 32 FROM analyst.series WHERE series_id = \(series)
                """, as: Bool.self) == true)
        }
    }

    @Test func pausingSkipsOccurrencesAndResumingContinuesWithTheNext() async throws {
        try await TestDatabase.with { client, _ in
            let series = try await hourly(client, devices: 5)
            try await withSimulator { sim in
                _ = try await sendRun(client, apns: sim.clientConfiguration)
                try await client.exec("UPDATE campaigns SET status = 'paused' WHERE id = \(series)")
                try await pass(60, series: series, client)
                let paused = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(paused.series.made.isEmpty && paused.figures.sent == 0)
                // Resumed: the moment that came while it was paused is not made up.
                try await client.exec("UPDATE campaigns SET status = 'scheduled' WHERE id = \(series)")
                let resumed = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(resumed.series.made.isEmpty)
                try await pass(60, series: series, client)
                let next = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(next.series.made.count == 1 && next.figures.sent == 5)
                #expect(await sim.simulator.accepted.count == 10)
            }
            #expect(try await occurrences(series, client).map(\.occurrence) == [2, 4])
        }
    }

    @Test func pausingASeriesPausesTheOccurrenceUnderWay() async throws {
        try await TestDatabase.with { client, _ in
            let series = try await hourly(client, devices: 4)
            try await client.exec("SELECT herald_occurrence(\(series), 2, now())")
            try await client.exec("UPDATE campaigns SET status = 'paused' WHERE id = \(series)")
            #expect(try await client.scalar("SELECT status FROM campaigns WHERE series_id = \(series)", as: String.self) == "paused")
            try await client.exec("UPDATE campaigns SET status = 'scheduled' WHERE id = \(series)")
            #expect(try await client.scalar("SELECT status FROM campaigns WHERE series_id = \(series)", as: String.self) == "scheduled")
            try await client.exec("UPDATE campaigns SET status = 'cancelled' WHERE id = \(series)")
            #expect(try await client.scalar("SELECT status FROM campaigns WHERE series_id = \(series)", as: String.self) == "cancelled")
        }
    }

    @Test func onEntryEachUserGetsItOnceAsTheyEnter() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 10))
            try await client.exec("""
                INSERT INTO segments (name, rule) VALUES ('gold', '{"attr": "attributes.tier", "op": "=", "value": "gold"}')
                """)
            try await client.exec(Fixtures.campaign(name: "Welcome", kind: "feedback", segment: "gold"))
            try await client.exec("UPDATE campaigns SET on_segment_entry = true, send_at = now() - interval '1 minute'")
            let series = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Welcome'", as: Int64.self))
            try await withSimulator { sim in
                let first = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(first.figures.sent == 5)
                // Entering: one user's attribute now matches; a new user
                // registers with two devices; a gold user adds a device.
                try await client.exec("""
                    UPDATE users SET attributes = attributes || '{"tier": "gold"}' WHERE external_id = 'u1';
                    INSERT INTO users (external_id, time_zone, attributes) VALUES ('new', 'UTC', '{"tier": "gold"}');
                    INSERT INTO devices (user_id, token, environment)
                    SELECT id, lpad(to_hex(id + 7000 + n), 64, '0'), 'production'
                    FROM users, generate_series(1, 2) n WHERE external_id = 'new';
                    INSERT INTO devices (user_id, token, environment)
                    SELECT id, lpad(to_hex(id + 9000), 64, '0'), 'production' FROM users WHERE external_id = 'u2'
                    """)
                let second = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(second.figures.sent == 3)
                let third = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(third.figures.sent == 0)
                let tokens = await sim.simulator.accepted.map(\.deviceToken)
                #expect(tokens.count == 8 && Set(tokens).count == 8)
            }
            // One open occurrence whose figures grew run by run.
            let made = try await occurrences(series, client)
            #expect(made.count == 1 && made.first?.sent == 8)
            #expect(try await client.scalar("""
                SELECT status = 'running' AND open_until = 'infinity' FROM campaigns WHERE series_id = \(series)
                """, as: Bool.self) == true)
        }
    }

    @Test func onEntryWithResendAfterSendsAgainOncePeriodPassed() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 6))
            try await client.exec(Fixtures.campaign(name: "Come back"))
            try await client.exec("""
                UPDATE campaigns SET on_segment_entry = true, resend_after = '1 day', send_at = now() - interval '1 hour'
                """)
            let series = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Come back'", as: Int64.self))
            try await withSimulator { sim in
                #expect(try await sendRun(client, apns: sim.clientConfiguration).figures.sent == 6)
                #expect(try await sendRun(client, apns: sim.clientConfiguration).figures.sent == 0)
                // A day passes for the series and what it sent.
                try await client.exec("""
                    UPDATE campaigns SET send_at = send_at - interval '1 day',
                                         open_until = open_until - interval '1 day' WHERE series_id = \(series);
                    UPDATE campaigns SET send_at = send_at - interval '1 day' WHERE id = \(series);
                    UPDATE deliveries SET created_at = created_at - interval '1 day'
                    WHERE campaign_id IN (SELECT id FROM campaigns WHERE series_id = \(series))
                    """)
                let again = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(again.series.made.count == 1 && again.figures.sent == 6)
                #expect(await sim.simulator.accepted.count == 12)
            }
            #expect(try await occurrences(series, client).map(\.sent) == [6, 6])
        }
    }

    @Test func previewShowsTheScheduleAndTheOccurrences() async throws {
        try await TestDatabase.with { client, _ in
            let series = try await hourly(client, devices: 3)
            try await client.exec("UPDATE campaigns SET repeat_count = 5 WHERE id = \(series)")
            let stores = RunStores(client: client, logger: TestDatabase.logger)
            let before = try await CampaignPreview.make(stores: stores, campaign: series, topic: "t").text
            #expect(before.contains("series: recurring every hour, 5 times (UTC); next: #3 "), "\(before)")
            #expect(before.contains("no occurrence yet") && before.contains("audience now: 3 devices"))
            try await withSimulator { sim in _ = try await sendRun(client, apns: sim.clientConfiguration) }
            let after = try await CampaignPreview.make(stores: stores, campaign: series, topic: "t").text
            #expect(after.contains("latest occurrence #2"), "\(after)")
            let occurrence = try #require(try await client.scalar("SELECT id FROM campaigns WHERE series_id = \(series)", as: Int64.self))
            let one = try await CampaignPreview.make(stores: stores, campaign: occurrence, topic: "t").text
            #expect(one.contains("series: occurrence #2 of campaign \(series)"), "\(one)")
            // The report: the series with its occurrences, the occurrence with its series.
            let report = try await AnalystReport(client: client, logger: TestDatabase.logger).render()
            #expect(report.contains("recurring every hour: 1 occurrence"), "\(report)")
            #expect(report.contains("#2 campaign \(occurrence) completed: targeted 3, sent 3"), "\(report)")
            #expect(report.contains("occurrence #2 of campaign \(series)"))
        }
    }

    @Test func anUnapprovedSeriesMakesNoOccurrenceAndItsApprovalCarries() async throws {
        try await TestDatabase.with { client, _ in
            let series = try await hourly(client, devices: 6)
            try await client.exec("UPDATE settings SET require_approval = true")
            try await withSimulator { sim in
                let first = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(first.series.made.isEmpty && first.figures.sent == 0)
                try await client.approveAsAnotherPerson(series)
                let second = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(second.series.made.count == 1 && second.figures.sent == 6)
                #expect(try await client.scalar("""
                    SELECT o.approved_by = s.approved_by AND o.created_by = s.created_by
                    FROM campaigns o JOIN campaigns s ON s.id = o.series_id WHERE s.id = \(series)
                    """, as: Bool.self) == true)
                // A change to its schedule withdraws the series' approval: no next occurrence.
                try await client.exec("UPDATE campaigns SET repeat_every = 2 WHERE id = \(series)")
                #expect(try await client.scalar("""
                    SELECT reason FROM campaign_approvals WHERE campaign_id = \(series) ORDER BY id DESC LIMIT 1
                    """, as: String.self) == "changed: schedule")
                try await pass(120, series: series, client)
                let third = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(third.series.made.isEmpty && third.figures.sent == 0)
            }
        }
    }

    @Test func aLocalSeriesSendsEachOccurrenceAtEachUsersOwnTime() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 8))
            try await client.exec("UPDATE users SET time_zone = 'Etc/GMT-14' WHERE id % 2 = 0")
            try await client.exec(Fixtures.campaign(name: "Daily nine"))
            // A daily local time that UTC+14 reached 30 minutes ago.
            try await client.exec("""
                UPDATE campaigns SET repeat_unit = 'day',
                    send_at_local = date_trunc('minute', now() AT TIME ZONE 'Etc/GMT-14') - interval '30 minutes'
                """)
            let series = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Daily nine'", as: Int64.self))
            try await withSimulator { sim in
                let run = try await sendRun(client, apns: sim.clientConfiguration)
                #expect(run.series.made.count == 1 && run.figures.sent == 4)
            }
            #expect(try await client.scalar("""
                SELECT o.send_at_local = s.send_at_local AND o.send_at = s.send_at AND o.occurrence = 1
                FROM campaigns o JOIN campaigns s ON s.id = o.series_id WHERE s.id = \(series)
                """, as: Bool.self) == true)
            // The UTC users' 4 wait for their own moment, 14 hours on.
            #expect(try await client.scalar("""
                SELECT count(*) FROM delivery_status d JOIN campaigns o ON o.id = d.campaign_id
                WHERE o.series_id = \(series) AND d.status = 'queued'
                  AND d.not_before BETWEEN now() + interval '13 hours' AND now() + interval '14 hours'
                """, as: Int64.self) == 4)
        }
    }

    @Test func aSeriesIsCheckedWhenWritten() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.campaign(name: "S"))
            let refusals: [(String, String)] = [
                ("repeat_unit = 'fortnight'", "campaign repeat_unit must be minute, hour, day, week or month"),
                ("repeat_unit = 'day', repeat_every = 0", "campaign repeat_every must be from 1 to 1000"),
                ("repeat_unit = 'day', repeat_on = '{mon}'", "campaign repeat_on is for repeat_unit week: mon, tue … sun"),
                ("repeat_unit = 'week', repeat_on = '{monday}'", "campaign repeat_on is for repeat_unit week: mon, tue … sun"),
                ("repeat_unit = 'month', repeat_day = 32", "campaign repeat_day is for repeat_unit month, from 1 to 31"),
                ("repeat_count = 3", "campaign repeat_count must be at least 1, with repeat_unit"),
                ("repeat_unit = 'day', repeat_until = send_at - interval '1 day'", "campaign repeat_until must be after send_at, with repeat_unit"),
                ("repeat_unit = 'day', on_segment_entry = true", "campaign repeats (repeat_unit) or is on_segment_entry, not both"),
                ("resend_after = '1 day'", "campaign resend_after needs on_segment_entry, at least 1 minute"),
                ("on_segment_entry = true, resend_after = '10 seconds'", "campaign resend_after needs on_segment_entry, at least 1 minute"),
                ("on_segment_entry = true, send_at_local = '2026-12-01 09:00'", "campaign on_segment_entry is at send_at, not send_at_local"),
            ]
            for (set, reason) in refusals {
                let refusal = await client.refusal("UPDATE campaigns SET \(set) WHERE name = 'S'")
                #expect(refusal?.contains(reason) == true, "\(set): \(refusal ?? "accepted")")
            }
        }
    }
}
