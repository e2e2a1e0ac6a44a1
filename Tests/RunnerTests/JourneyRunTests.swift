import APNs
import APNsSimulator
import Foundation
import HeraldCore
import PostgresNIO
import Runner
import Store
import Testing
import TestSupport

/// A journey moved by real runs against PostgreSQL and the APNs simulator (DESIGN, contract
/// 11): the demo's "How was your order?", entered by a conversion, answered through the
/// reply store, timed out, and left at its goal. What APNs accepted (the simulator's own
/// log) is compared with the ledger and the members' transitions.
@Suite("Journeys moved by runs", .serialized)
struct JourneyRunTests {
    /// The catalogue, users u1…u4 (a device each), and the journey: ask (a feedback prompt)
    /// → listen for two days → a reply whose text says damaged: sorry; another answer: thanks;
    /// nothing: out. A purchase is the goal.
    static let journey = """
        INSERT INTO journeys (id, name, first_step, entry, entry_event, goal_event)
        VALUES (1, 'After the order', 'ask', 'conversion', 'order_delivered', 'purchase');
        INSERT INTO campaigns (id, name, kind, status, content, category_id, journey_id) VALUES
            (101, 'Ask', 'feedback', 'scheduled', '{"en": {"title": "How was your order?", "body": "Tell us"}}', 'feedback.v1', 1);
        INSERT INTO campaigns (id, name, kind, status, content, media_url, journey_id) VALUES
            (102, 'Sorry', 'poster', 'scheduled', '{"en": {"title": "We are sorry", "body": "Here is a code"}}', 'https://cdn.example.com/s.png', 1),
            (103, 'Thanks', 'poster', 'scheduled', '{"en": {"title": "Thank you", "body": "Review us?"}}', 'https://cdn.example.com/t.png', 1);
        INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id, timeout, of_step) VALUES
            (1, 1, 'ask', 'send', 101, NULL, NULL),
            (1, 1, 'listen', 'wait_for', NULL, '2 days', 'ask'),
            (1, 1, 'sorry', 'send', 102, NULL, NULL),
            (1, 1, 'thanks', 'send', 103, NULL, NULL);
        INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES
            (1, 1, 'ask', 1, 'next', '{}', 'listen'),
            (1, 1, 'listen', 1, 'text', '{"any_words": {"*": ["damaged", "late", "abîmé"]}}', 'sorry'),
            (1, 1, 'listen', 2, 'reply', '{}', 'thanks'),
            (1, 1, 'listen', 3, 'timeout', '{}', NULL),
            (1, 1, 'sorry', 1, 'next', '{}', NULL),
            (1, 1, 'thanks', 1, 'next', '{}', NULL);
        UPDATE journeys SET status = 'running' WHERE id = 1;
        """

    /// The catalogue, users u1…u`users` (a device each) and the journey, every user's order
    /// delivered: each is a member at `ask`.
    static func everyUserEntered(_ client: Database, users: Int) async throws {
        try await client.exec(Fixtures.catalogue)
        try await client.exec(Fixtures.audience(count: users))
        try await client.exec(Self.journey)
        try await client.exec("""
            INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
            SELECT id, 'order_delivered', now(), 'order-' || id FROM users
            """)
    }

    static func run(_ client: Database, _ sim: RunningAPNsSimulator) async throws -> RunSummary {
        try await sendRun(client, apns: sim.clientConfiguration,
                          options: RunOptions(topic: sim.clientConfiguration.topic, batchSize: 100, concurrency: 10))
    }

    /// The campaign each accepted notification was of, by its apns-id in the ledger.
    static func accepted(_ client: Database, _ sim: RunningAPNsSimulator) async throws -> [String] {
        let ids = await sim.simulator.accepted.map { $0.apnsID.lowercased() }
        var names: [String] = []
        for try await name in try await client.query("""
            SELECT c.name FROM unnest(\(ids)::text[]) AS a(id)
            JOIN delivery_status d ON d.apns_id::text = a.id JOIN campaigns c ON c.id = d.campaign_id
            ORDER BY c.name
            """, logger: TestDatabase.logger).decode(String.self) { names.append(name) }
        return names
    }

    static func paths(_ client: Database) async throws -> String? {
        try await client.scalar("""
            SELECT string_agg(u.external_id || ' ' || m.state || ' ' || p.path, '; ' ORDER BY u.external_id)
            FROM journey_members m JOIN users u ON u.id = m.user_id,
                 LATERAL (SELECT string_agg(t.from_step || '-' || t.kind || '->' || coalesce(t.to_step, 'out'), ' ' ORDER BY t.seq) AS path
                          FROM journey_transitions t WHERE t.member_id = m.id) p
            """, as: String.self)
    }

    /// Stores a reply to the `ask` message of user `user` as the app server does.
    static func reply(_ client: Database, user: String, action: String, text: String?,
                      occurredAt: Date = Date()) async throws {
        let delivery = try #require(try await client.scalar("""
            SELECT d.id FROM deliveries d JOIN users u ON u.id = d.user_id WHERE d.campaign_id = 101 AND u.external_id = '\(user)'
            """, as: Int64.self))
        let stored = try await ReplyStore(client: client, logger: TestDatabase.logger).store([
            .init(replyID: UUID(), deliveryID: delivery, action: action, text: text, occurredAt: occurredAt),
        ], source: "api")
        #expect(stored.stored == 1, "\(stored)")
    }

    @Test func membersAreSentTheirStepsAndBranchOnWhatTheyTypedTimedOutOrBought() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 4))
            try await client.exec(Self.journey)
            // The conversions enter their users, in the transaction that stores them.
            try await client.exec("""
                INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
                SELECT id, 'order_delivered', now(), 'order-' || id FROM users WHERE external_id IN ('u1', 'u2', 'u3', 'u4')
                """)
            #expect(try await client.scalar("SELECT count(*) FROM journey_members WHERE state = 'active' AND step = 'ask'", as: Int64.self) == 4)
            try await withSimulator { sim in
                // Run 1: everyone is asked, then listens.
                let first = try await Self.run(client, sim)
                #expect(first.journeys.moves == 4 && first.journeys.rowsWritten == 4)
                #expect(try await Self.accepted(client, sim) == ["Ask", "Ask", "Ask", "Ask"])
                #expect(try await client.scalar("SELECT count(*) FROM journey_members WHERE step = 'listen' AND waiting", as: Int64.self) == 4)

                // u1 types that the box came damaged, u2 that it was lovely, u4 buys: each
                // makes its member due at once; u3 says nothing. u1's phone is an hour behind:
                // its reply counts all the same, stored after u1 entered.
                try await Self.reply(client, user: "u1", action: "comment", text: "The box arrived DAMAGED",
                                     occurredAt: Date(timeIntervalSinceNow: -3600))
                try await Self.reply(client, user: "u2", action: "comment", text: "Lovely, thank you")
                try await client.exec("""
                    INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
                    SELECT id, 'purchase', now(), 'buy-4' FROM users WHERE external_id = 'u4'
                    """)
                #expect(try await client.scalar("""
                    SELECT string_agg(u.external_id, ',' ORDER BY u.external_id) FROM journey_members m JOIN users u ON u.id = m.user_id
                    WHERE m.due_at <= now()
                    """, as: String.self) == "u1,u2,u4")

                // Run 2: the answers are sent their step; the buyer leaves at the goal.
                let second = try await Self.run(client, sim)
                #expect(second.journeys.claimed == 3)
                #expect(try await Self.accepted(client, sim) == ["Ask", "Ask", "Ask", "Ask", "Sorry", "Thanks"])

                // Two days pass for u3 (its step reached two days ago): the timeout takes it out.
                try await client.exec("""
                    UPDATE journey_members SET reached_at = reached_at - interval '2 days', due_at = now()
                    WHERE state = 'active'
                    """)
                let third = try await Self.run(client, sim)
                #expect(third.journeys.claimed == 1 && third.journeys.left == 1 && third.journeys.rowsWritten == 0)
                #expect(try await Self.paths(client) == """
                    u1 done ask-next->listen listen-text->sorry sorry-next->out; \
                    u2 done ask-next->listen listen-reply->thanks thanks-next->out; \
                    u3 done ask-next->listen listen-timeout->out; \
                    u4 goal ask-next->listen listen-goal->out
                    """)
                // Nothing more is due; a fourth run moves nobody and sends nothing.
                let fourth = try await Self.run(client, sim)
                #expect(fourth.journeys.claimed == 0)
                #expect(await sim.simulator.accepted.count == 6)
            }
        }
    }

    /// A journey entered by a segment: each run enters the users in it who were not members
    /// (reentry never), and a user who comes into the segment later enters at the next run.
    @Test func aSegmentsUsersEnterAtEachRunOnceEach() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 6))
            try await client.exec("""
                INSERT INTO segments (id, name, rule) VALUES (5, 'gold', '{"attr": "attributes.tier", "op": "=", "value": "gold"}');
                INSERT INTO journeys (id, name, first_step, entry, entry_segment_id) VALUES (2, 'Gold welcome', 'hello', 'segment', 5);
                INSERT INTO campaigns (id, name, kind, status, content, media_url, journey_id) VALUES
                    (201, 'Hello gold', 'poster', 'scheduled', '{"en": {"title": "Hello", "body": "Gold member"}}', 'https://cdn.example.com/g.png', 2);
                INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id) VALUES (2, 1, 'hello', 'send', 201);
                INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES (2, 1, 'hello', 1, 'next', '{}', NULL);
                UPDATE journeys SET status = 'running' WHERE id = 2;
                """)
            try await withSimulator { sim in
                // Users 2, 4 and 6 are gold (Fixtures.audience).
                let first = try await Self.run(client, sim)
                #expect(first.journeys.entered == 3 && first.journeys.rowsWritten == 3)
                #expect(await sim.simulator.accepted.count == 3)
                // u1 becomes gold: the next run enters u1 alone; the others were members.
                try await client.exec(#"UPDATE users SET attributes = attributes || '{"tier": "gold"}' WHERE external_id = 'u1'"#)
                let second = try await Self.run(client, sim)
                #expect(second.journeys.entered == 1 && second.journeys.rowsWritten == 1)
                #expect(try await Self.accepted(client, sim) == Array(repeating: "Hello gold", count: 4))
                #expect(try await client.scalar(
                    "SELECT string_agg(u.external_id, ',' ORDER BY u.external_id) FROM journey_members m JOIN users u ON u.id = m.user_id WHERE m.state = 'done'",
                    as: String.self) == "u1,u2,u4,u6")
                let third = try await Self.run(client, sim)
                #expect(third.journeys.entered == 0)
            }
        }
    }

    /// A journey entered by a campaign: the users it was sent to enter at the next run, once
    /// each; a device APNs refused does not enter its user.
    @Test func aCampaignsAudienceEntersOnceItIsSent() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 4))
            try await client.exec(Fixtures.campaign(name: "Poster"))
            try await client.exec("""
                INSERT INTO journeys (id, name, first_step, entry, entry_campaign_id)
                SELECT 4, 'After the poster', 'follow', 'campaign', id FROM campaigns WHERE name = 'Poster';
                INSERT INTO campaigns (id, name, kind, status, content, media_url, journey_id) VALUES
                    (401, 'Follow-up', 'poster', 'scheduled', '{"en": {"title": "Still thinking?", "body": "It is still there"}}', 'https://cdn.example.com/f.png', 4);
                INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id) VALUES (4, 1, 'follow', 'send', 401);
                INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES (4, 1, 'follow', 1, 'next', '{}', NULL);
                UPDATE journeys SET status = 'running' WHERE id = 4;
                """)
            // u4's device is gone: APNs answers 410, and u4 never enters.
            let gone = try #require(try await client.scalar("SELECT d.token FROM devices d JOIN users u ON u.id = d.user_id WHERE u.external_id = 'u4'", as: String.self))
            try await withSimulator(customize: { $0.unregisteredTokens = [gone: Date(timeIntervalSinceNow: 600)] }) { sim in
                // The run that sends the poster comes after its journey moves: nobody yet.
                let first = try await Self.run(client, sim)
                #expect(first.journeys.entered == 0)
                let second = try await Self.run(client, sim)
                #expect(second.journeys.entered == 3 && second.journeys.rowsWritten == 3)
                let third = try await Self.run(client, sim)
                #expect(third.journeys.entered == 0)
                #expect(try await Self.accepted(client, sim) == ["Follow-up", "Follow-up", "Follow-up", "Poster", "Poster", "Poster"])
            }
        }
    }

    /// A branch on a segment's rule: gold users (by their attributes) get one message, the
    /// others another; a segment edge with `"in": false` holds for those outside it.
    @Test func aBranchOnASegmentSendsEachUserTheirSide() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 6))
            try await client.exec("""
                INSERT INTO segments (id, name, rule) VALUES (5, 'gold', '{"attr": "attributes.tier", "op": "=", "value": "gold"}');
                INSERT INTO journeys (id, name, first_step, entry, entry_event) VALUES (3, 'Tiers', 'tier', 'conversion', 'signup');
                INSERT INTO campaigns (id, name, kind, status, content, media_url, journey_id) VALUES
                    (301, 'Gold', 'poster', 'scheduled', '{"en": {"title": "Gold", "body": "Thanks"}}', 'https://cdn.example.com/g.png', 3),
                    (302, 'Others', 'poster', 'scheduled', '{"en": {"title": "Go gold", "body": "Upgrade"}}', 'https://cdn.example.com/o.png', 3);
                INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id) VALUES
                    (3, 1, 'tier', 'branch', NULL), (3, 1, 'gold', 'send', 301), (3, 1, 'others', 'send', 302);
                INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES
                    (3, 1, 'tier', 1, 'segment', '{"segment_id": 5, "in": false}', 'others'),
                    (3, 1, 'tier', 2, 'else', '{}', 'gold'),
                    (3, 1, 'gold', 1, 'next', '{}', NULL),
                    (3, 1, 'others', 1, 'next', '{}', NULL);
                UPDATE journeys SET status = 'running' WHERE id = 3;
                INSERT INTO conversions (user_id, event, occurred_at, idempotency_key) SELECT id, 'signup', now(), 's' || id FROM users;
                """)
            try await withSimulator { sim in
                let run = try await Self.run(client, sim)
                #expect(run.journeys.claimed == 6)
                #expect(try await client.scalar("""
                    SELECT string_agg(u.external_id || ':' || t.to_step, ',' ORDER BY u.external_id)
                    FROM journey_transitions t JOIN journey_members m ON m.id = t.member_id JOIN users u ON u.id = m.user_id
                    WHERE t.from_step = 'tier'
                    """, as: String.self) == "u1:others,u2:gold,u3:others,u4:gold,u5:others,u6:gold")
                #expect(try await Self.accepted(client, sim) == ["Gold", "Gold", "Gold", "Others", "Others", "Others"])
            }
        }
    }

    @Test func aPausedJourneyHoldsItsMembersAndSendsNothing() async throws {
        try await TestDatabase.with { client, _ in
            try await client.exec(Fixtures.catalogue)
            try await client.exec(Fixtures.audience(count: 2))
            try await client.exec(Self.journey)
            try await client.exec("""
                INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
                SELECT id, 'order_delivered', now(), 'order-' || id FROM users;
                UPDATE journeys SET status = 'paused' WHERE id = 1;
                """)
            try await withSimulator { sim in
                let paused = try await Self.run(client, sim)
                #expect(paused.journeys.claimed == 0)
                #expect(await sim.simulator.accepted.isEmpty)
                #expect(try await client.scalar("SELECT count(*) FROM journey_members WHERE step = 'ask' AND state = 'active'", as: Int64.self) == 2)
                try await client.exec("UPDATE journeys SET status = 'running' WHERE id = 1")
                let resumed = try await Self.run(client, sim)
                #expect(resumed.journeys.claimed == 2)
                #expect(await sim.simulator.accepted.count == 2)
            }
        }
    }

    /// Closing a journey (contract 11): whoever is still in it leaves at once (exited, a
    /// transition from the step they were at), what its messages had queued is cancelled,
    /// its messages complete, a run moves and sends nothing more of it, and it cannot be
    /// opened again.
    @Test func closingAJourneyExitsItsMembersCancelsWhatIsQueuedAndCompletesItsMessages() async throws {
        try await TestDatabase.with { client, _ in
            try await Self.everyUserEntered(client, users: 3)
            try await withSimulator { sim in
                _ = try await Self.run(client, sim)
                #expect(await sim.simulator.accepted.count == 3)
                // u1 answers; before a run moves it, a thank-you row of u2's is queued (as a
                // move in flight would leave it), and the journey closes.
                try await Self.reply(client, user: "u1", action: "comment", text: "fine")
                try await client.exec("""
                    INSERT INTO deliveries (campaign_id, device_id, user_id, status, not_before)
                    SELECT 103, dv.id, dv.user_id, 'queued', now() FROM devices dv JOIN users u ON u.id = dv.user_id WHERE u.external_id = 'u2'
                    """)
                try await client.exec("UPDATE journeys SET status = 'closed' WHERE id = 1")
                #expect(try await Self.paths(client) == """
                    u1 exited ask-next->listen listen-exited->out; \
                    u2 exited ask-next->listen listen-exited->out; \
                    u3 exited ask-next->listen listen-exited->out
                    """)
                #expect(try await client.scalar("SELECT status FROM delivery_status WHERE campaign_id = 103", as: String.self) == "cancelled")
                #expect(try await client.scalar("""
                    SELECT string_agg(status, ',' ORDER BY id) FROM campaigns WHERE journey_id = 1
                    """, as: String.self) == "completed,completed,completed")
                #expect(try await client.scalar("SELECT closed_at IS NOT NULL FROM journeys WHERE id = 1", as: Bool.self) == true)
                let after = try await Self.run(client, sim)
                #expect(after.journeys.claimed == 0 && after.campaigns.isEmpty)
                #expect(await sim.simulator.accepted.count == 3)
                await #expect(throws: (any Error).self) {
                    try await client.exec("UPDATE journeys SET status = 'running' WHERE id = 1")
                }
            }
        }
    }

    /// `herald preview --journey`: the graph from the first step, each message's texts, no
    /// problem, where the members are, and the path a sample would take now, decided by the
    /// run's own claim and decision, written nowhere; a journey that cannot run lists why.
    @Test func thePreviewShowsTheGraphTheProblemsAndTheSamplesPathsWritingNothing() async throws {
        try await TestDatabase.with { client, _ in
            try await Self.everyUserEntered(client, users: 3)
            try await withSimulator { sim in _ = try await Self.run(client, sim) }
            try await Self.reply(client, user: "u1", action: "comment", text: "It came damaged")
            let before = try await client.scalar("""
                SELECT string_agg(id || ':' || step || ':' || due_at || ':' || moves, ',' ORDER BY id) FROM journey_members
                """, as: String.self)
            let preview = try await JourneyPreview.make(client: client, journey: 1, logger: TestDatabase.logger)
            #expect(preview.canRun)
            #expect(preview.data.steps.map(\.key) == ["ask", "listen", "sorry", "thanks"])
            let text = preview.text
            #expect(text.contains("  listen: wait_for (timeout 2 days), listening to ask"), "\(text)")
            #expect(text.contains("    en: How was your order? — Tell us"))
            #expect(text.contains("members: 3 entered, 0 left; now listen 3 (3 waiting for an event)"), "\(text)")
            #expect(text.contains("  u1, at listen: listen -text-> sorry, sorry -next-> out; sends sorry; leaves, done"), "\(text)")
            // Its timeout two days after it reached the step (less the seconds since).
            #expect(text.contains("  u2, at listen: rests at listen, looked at again in 2 d 0 h or at an event of its user")
                    || text.contains("  u2, at listen: rests at listen, looked at again in 1 d 23 h or at an event of its user"), "\(text)")
            #expect(try await client.scalar("""
                SELECT string_agg(id || ':' || step || ':' || due_at || ':' || moves, ',' ORDER BY id) FROM journey_members
                """, as: String.self) == before)
            #expect(try await client.scalar("SELECT count(*) FROM journey_transitions", as: Int64.self) == 3)
            #expect(try await client.scalar("SELECT count(*) FROM deliveries WHERE campaign_id = 102", as: Int64.self) == 0)

            // A step nothing reaches, and a wait_for without a timeout edge: refused, each named.
            try await client.exec("""
                INSERT INTO journey_steps (journey_id, version, step, kind) VALUES (1, 2, 'ask', 'wait_for'), (1, 2, 'lost', 'exit');
                INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES (1, 2, 'ask', 1, 'reply', '{}', NULL);
                """)
            try await client.exec("UPDATE journeys SET version = 2, status = 'draft' WHERE id = 1")
            let broken = try await JourneyPreview.make(client: client, journey: 1, logger: TestDatabase.logger)
            #expect(!broken.canRun)
            #expect(broken.text.contains("step lost: "), "\(broken.text)")
            #expect(broken.text.contains("step ask: "), "\(broken.text)")
        }
    }
}
