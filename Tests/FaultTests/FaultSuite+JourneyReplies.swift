import Foundation
import PostgresNIO
import Store
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension FaultSuite {
    /// A journey that listens for replies (DESIGN, contract 11): its members are advanced and
    /// sent their question by `herald run` while PostgreSQL is restarted under them; then
    /// users answer through a real `herald serve` while runs go on moving the woken members,
    /// PostgreSQL is restarted again and a run is killed with SIGKILL. Every member takes each
    /// edge once (its transitions, numbered 1, 2, 3 without a gap); every reply `herald serve`
    /// acknowledged moves its member to the thanks, whatever the phone's clock said; a member
    /// whose user did not answer is still listening; each device got each message within the
    /// repeat bound of the kill (the simulator's own log); and a paused journey's members,
    /// entered by the same events, were sent nothing.
    @Test func aWaitForMissesNoAcknowledgedReplyThroughRestartsAndAKill() async throws {
        try await withScratch { dir in
            let cluster = try await DedicatedCluster.start(in: dir)
            do {
                let database = try DatabaseConfiguration(url: cluster.url, maxConnections: 4)
                let members = 3000
                let concurrency = 20
                try await withMigrated(database) { client in
                    _ = try await Self.campaign(client, devices: members, name: "Not sent", collapseID: "not-sent")
                    try await client.exec("UPDATE campaigns SET send_at = now() + interval '1 year'")
                    try await client.exec(Self.listeningJourneys)
                    // The orders delivered enter every user into both journeys; the second is paused.
                    try await client.exec("""
                        INSERT INTO conversions (user_id, event, occurred_at, idempotency_key)
                        SELECT id, 'order_delivered', now(), 'order-' || id FROM users;
                        UPDATE journeys SET status = 'paused' WHERE name = 'Paused';
                        """)
                }
                let sim = try SimulatorProcess(directory: dir, faults: ["--latency-ms", "20"])
                try await sim.start()
                let secret = replySecret()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: secret, extra: [
                    "HERALD_CONCURRENCY": "\(concurrency)", "HERALD_DB_OUTAGE_SECONDS": "60",
                ])
                var runs = 0
                var kills = 0

                // 1. A run moves the members to their question and sends it; PostgreSQL is
                //    restarted as soon as the first of them have moved.
                func moved() async throws -> Int {
                    try await withPostgres(database, logger: TestDatabase.logger) { client in
                        try await Self.count(client, "SELECT count(*) FROM journey_transitions")
                    }
                }
                runs += 1
                let first = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                try await waitUntil("the first members moved", limit: .seconds(90)) { try await moved() > 0 }
                try await cluster.restart()
                let movedAtRestart = try await moved()
                let code = try await first.wait(limit: .seconds(180))
                #expect(code == 0 || code == 75, "herald run exited \(code)\n\(first.tail())")
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)

                // 2. Two thirds of the users answer through herald serve, while runs keep
                //    moving the members their answers wake; PostgreSQL restarts at a third of
                //    the answers, a run is killed at two thirds.
                let asked = try await withPostgres(database, logger: TestDatabase.logger) { client in
                    var ids: [Int64] = []
                    for try await id in try await client.query("""
                        SELECT d.id FROM deliveries d JOIN campaigns c ON c.id = d.campaign_id
                        WHERE c.name = 'Listen: ask' AND d.user_id % 3 <> 0 ORDER BY d.id
                        """, logger: TestDatabase.logger).decode(Int64.self) { ids.append(id) }
                    return ids
                }
                let replies = try Self.pendingReplies(asked, secret: secret)
                let server = try await Self.startIntake(database: database, secret: secret, dir: dir)
                let ledger = ReplyLedger()
                let senders = Self.sendAll(replies, server: server, ledger: ledger, spacing: .milliseconds(5))
                // One run after another, as cron would start them, each moving the members
                // woken so far; the faults land on whichever is under way.
                var restarted = false
                while await ledger.answered < replies.count || !restarted || kills == 0 {
                    runs += 1
                    let w = try Child(name: "worker", arguments: ["run"], environment: env, directory: dir)
                    while w.isRunning {
                        let answeredSoFar = await ledger.answered
                        if !restarted, answeredSoFar >= replies.count / 3 {
                            try await cluster.restart()
                            restarted = true
                        } else if restarted, kills == 0, answeredSoFar >= 2 * replies.count / 3 {
                            w.signal(SIGKILL)
                        }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    let code = try await w.wait(limit: .seconds(180))
                    if code == 128 + SIGKILL { kills += 1 }
                    #expect([0, 75, 128 + SIGKILL].contains(code), "herald run exited \(code)\n\(w.tail())")
                    try await Task.sleep(for: .milliseconds(100))
                }
                try await senders.value
                try await server.stop()
                // The last runs move whoever the last answers woke.
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await sim.stop()
                let accepted = try sim.accepted()
                let answered = await ledger.snapshot()

                let allRuns = runs, allKills = kills
                try await withPostgres(database, logger: TestDatabase.logger) { client in
                    print("journey replies: \(movedAtRestart) of \(members) members had moved when PostgreSQL restarted; "
                          + "\(answered.statuses.count) replies acknowledged, \(answered.retries) retries; "
                          + "\(allRuns) runs, \(allKills) killed")
                    #expect(answered.statuses.count == replies.count)
                    #expect(movedAtRestart < members, "PostgreSQL restarted after every member had moved")
                    #expect(allKills == 1)
                    // Each acknowledged reply moved its member along reply → thanks → out, once.
                    let answeredMembers = try await Self.count(client, """
                        SELECT count(*) FROM journey_members m JOIN journeys j ON j.id = m.journey_id
                        WHERE j.name = 'Listen' AND m.state = 'done' AND m.moves = 3 AND m.user_id % 3 <> 0
                          AND (SELECT string_agg(t.from_step || '-' || t.kind || '->' || coalesce(t.to_step, 'out'), ' ' ORDER BY t.seq)
                               FROM journey_transitions t WHERE t.member_id = m.id) = 'ask-next->listen listen-reply->thanks thanks-next->out'
                          AND (SELECT array_agg(t.seq ORDER BY t.seq) FROM journey_transitions t WHERE t.member_id = m.id) = '{1,2,3}'
                        """)
                    #expect(answeredMembers == replies.count)
                    // The others still listen, having taken one edge.
                    let listening = try await Self.count(client, """
                        SELECT count(*) FROM journey_members m JOIN journeys j ON j.id = m.journey_id
                        WHERE j.name = 'Listen' AND m.state = 'active' AND m.step = 'listen' AND m.waiting AND m.moves = 1
                          AND m.user_id % 3 = 0
                          AND (SELECT count(*) FROM journey_transitions t WHERE t.member_id = m.id) = 1
                        """)
                    #expect(listening == members - replies.count)
                    // The paused journey's members entered, and stayed at their first step; nothing of it was sent.
                    #expect(try await Self.count(client, """
                        SELECT count(*) FROM journey_members m JOIN journeys j ON j.id = m.journey_id
                        WHERE j.name = 'Paused' AND m.state = 'active' AND m.step = 'ask' AND m.moves = 0
                        """) == members)
                    #expect(try await Self.count(client, """
                        SELECT count(*) FROM deliveries d JOIN campaigns c ON c.id = d.campaign_id WHERE c.name = 'Paused: ask'
                        """) == 0)
                    #expect(accepted.filter { $0.collapseID == "paused-ask" }.isEmpty)
                    // Each device got the question, and the answered ones the thanks, within the bound.
                    for (message, collapse, expected) in [("Listen: ask", "listen-ask", members),
                                                          ("Listen: thanks", "listen-thanks", replies.count)] {
                        let id = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = '\(message)'", as: Int64.self))
                        var f = try await compare("journey replies (\(collapse))", client: client,
                                                  accepted: accepted.filter { $0.collapseID == collapse }, campaign: id, collapseID: collapse)
                        f.runs = allRuns
                        f.kills = allKills
                        print(f)
                        #expect(f.sentInLedger == expected && f.delivered == expected)
                        #expect(f.lost == 0 && f.failed == 0 && f.leftover == 0)
                        #expect(f.repeated <= Self.repeatBound(concurrency: concurrency) * max(allKills + 2, 1))
                        #expect(f.repeatsWithOtherAPNsID == 0 && f.ledgerAPNsIDMismatch == 0)
                    }
                }
            } catch {
                await cluster.wipe()
                throw error
            }
            await cluster.wipe()
        }
    }

    /// Two journeys entered by an order delivered. "Listen" asks (a poster, whose buttons the
    /// replies use), listens a day for any answer, and thanks those who answered; "Paused"
    /// only asks, and is paused before any run.
    static let listeningJourneys = """
        INSERT INTO journeys (name, first_step, entry, entry_event) VALUES
            ('Listen', 'ask', 'conversion', 'order_delivered'), ('Paused', 'ask', 'conversion', 'order_delivered');
        INSERT INTO campaigns (name, kind, status, content, media_url, category_id, collapse_id, journey_id)
        SELECT m.name, 'poster', 'scheduled', '{"en": {"title": "How was it?", "body": "Tell us"}}',
               'https://cdn.example.com/p.png', 'poster.v1', m.collapse, j.id
        FROM (VALUES ('Listen: ask', 'listen-ask', 'Listen'), ('Listen: thanks', 'listen-thanks', 'Listen'),
                     ('Paused: ask', 'paused-ask', 'Paused')) AS m(name, collapse, journey)
        JOIN journeys j ON j.name = m.journey;
        INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id, timeout, of_step)
        SELECT j.id, 1, s.step, s.kind, c.id, s.timeout::interval, s.of_step
        FROM (VALUES ('Listen', 'ask', 'send', 'Listen: ask', NULL, NULL),
                     ('Listen', 'listen', 'wait_for', NULL, '1 day', 'ask'),
                     ('Listen', 'thanks', 'send', 'Listen: thanks', NULL, NULL),
                     ('Paused', 'ask', 'send', 'Paused: ask', NULL, NULL)) AS s(journey, step, kind, message, timeout, of_step)
        JOIN journeys j ON j.name = s.journey LEFT JOIN campaigns c ON c.name = s.message;
        INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step)
        SELECT j.id, 1, e.from_step, e.position, e.kind, '{}', e.to_step
        FROM (VALUES ('Listen', 'ask', 1, 'next', 'listen'), ('Listen', 'listen', 1, 'reply', 'thanks'),
                     ('Listen', 'listen', 2, 'timeout', NULL), ('Listen', 'thanks', 1, 'next', NULL),
                     ('Paused', 'ask', 1, 'next', NULL)) AS e(journey, from_step, position, kind, to_step)
        JOIN journeys j ON j.name = e.journey;
        UPDATE journeys SET status = 'running';
        """
}
