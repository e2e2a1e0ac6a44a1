import Foundation
import PostgresNIO
import Testing
import TestSupport

/// Held-out users and the global control group, read from the simulator's
/// own log: a one-off campaign with a holdout, two occurrences of a recurring
/// series and a campaign on segment entry, sent by real `herald run`s; no
/// device of a held-out or control-group user got anything.
extension FaultSuite {
    @Test func heldOutAndControlGroupUsersAreNeverSentFromTheSimulatorsLog() async throws {
        try await TestDatabase.with { client, database in
            try await withScratch { dir in
                let users = 2_000
                try await client.exec(Fixtures.catalogue)
                try await client.exec(Fixtures.audience(count: users))
                // Every fourth user has a second device: held out means all of a user's devices.
                try await client.exec("""
                    INSERT INTO devices (user_id, token, environment)
                    SELECT id, lpad(to_hex(id + 1000000), 64, '0'), 'production' FROM users WHERE id % 4 = 0
                    """)
                try await client.exec("""
                    INSERT INTO segments (name, rule) VALUES ('gold', '{"attr": "attributes.tier", "op": "=", "value": "gold"}')
                    """)
                try await client.exec("UPDATE settings SET control_group_pct = 10")
                try await client.exec(Fixtures.campaign(name: "Plain"))
                try await client.exec(Fixtures.campaign(name: "Hourly"))
                try await client.exec(Fixtures.campaign(name: "Welcome", segment: "gold"))
                try await client.exec("""
                    UPDATE campaigns SET holdout_pct = 20 WHERE name = 'Plain';
                    UPDATE campaigns SET holdout_pct = 15, repeat_unit = 'hour',
                                         send_at = date_trunc('minute', now()) - interval '90 minutes' WHERE name = 'Hourly';
                    UPDATE campaigns SET holdout_pct = 25, on_segment_entry = true, send_at = now() - interval '1 minute'
                    WHERE name = 'Welcome'
                    """)
                let series = try #require(try await client.scalar("SELECT id FROM campaigns WHERE name = 'Hourly'", as: Int64.self))

                let sim = try SimulatorProcess(directory: dir)
                try await sim.start()
                let env = try await workerEnvironment(database: database, simulator: sim, secret: replySecret())
                var runs = 0
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                // An hour passes for the series; users enter the segment (an
                // attribute now matches, new users register with a device).
                try await client.exec("""
                    UPDATE campaigns SET send_at = send_at - interval '60 minutes' WHERE id = \(series);
                    UPDATE users SET attributes = attributes || '{"tier": "gold"}' WHERE id % 2 = 1 AND id <= 801;
                    INSERT INTO users (external_id, time_zone, attributes)
                    SELECT 'late' || n, 'UTC', '{"tier": "gold"}' FROM generate_series(1, 300) n;
                    INSERT INTO devices (user_id, token, environment)
                    SELECT id, lpad(to_hex(id + 2000000), 64, '0'), 'production' FROM users WHERE external_id LIKE 'late%'
                    """)
                try await Self.runToCompletion(env: env, dir: dir, runs: &runs)
                try await sim.stop()

                // The log's tokens, mapped to their users through devices, and
                // each line's delivery to its campaign.
                let accepted = try sim.accepted()
                let tokens = accepted.map(\.token)
                let deliveries = accepted.map { $0.delivery ?? -1 }
                var byKind: [String: (sent: Int64, heldOut: Int64, control: Int64, toHeldOut: Int64, toControl: Int64)] = [:]
                for try await (kind, sent, heldOut, control, toHeldOut, toControl) in try await client.query("""
                    WITH log AS (SELECT * FROM unnest(\(tokens)::text[], \(deliveries)::bigint[]) AS l(token, delivery)),
                    kinds AS (
                        -- An occurrence holds out whom its series says (docs/marketers.md, "Did it work?").
                        SELECT c.id, greatest(c.holdout_pct, coalesce(s.holdout_pct, 0)) AS holdout_pct,
                               coalesce(c.series_id, c.id) AS hash_id,
                               CASE WHEN s.on_segment_entry THEN 'on entry' WHEN s.repeat_unit IS NOT NULL THEN 'recurring'
                                    ELSE 'one-off' END AS kind
                        FROM campaigns c LEFT JOIN campaigns s ON s.id = c.series_id
                        WHERE c.repeat_unit IS NULL AND NOT c.on_segment_entry
                    ),
                    control AS (
                        SELECT u.id FROM users u CROSS JOIN settings st
                        WHERE herald_bucket10k('control:' || st.control_group_salt || ':' || u.id) < st.control_group_pct * 100
                    ),
                    sent AS (
                        SELECT k.kind, k.id AS campaign, k.holdout_pct, k.hash_id, dv.user_id
                        FROM log JOIN devices dv ON dv.token = log.token
                        JOIN delivery_status d ON d.id = log.delivery JOIN kinds k ON k.id = d.campaign_id
                    )
                    SELECT k.kind,
                           (SELECT count(*) FROM sent WHERE sent.kind = k.kind),
                           (SELECT count(*) FROM delivery_status d JOIN kinds k2 ON k2.id = d.campaign_id
                            WHERE k2.kind = k.kind AND d.status = 'held_out' AND d.last_error <> 'global control group'),
                           (SELECT count(*) FROM delivery_status d JOIN kinds k2 ON k2.id = d.campaign_id
                            WHERE k2.kind = k.kind AND d.status = 'held_out' AND d.last_error = 'global control group'),
                           (SELECT count(*) FROM sent WHERE sent.kind = k.kind
                              AND (herald_bucket10k('holdout:' || sent.hash_id || ':' || sent.user_id) < sent.holdout_pct * 100
                                   OR EXISTS (SELECT 1 FROM delivery_status h WHERE h.campaign_id = sent.campaign
                                                AND h.user_id = sent.user_id AND h.status = 'held_out'))),
                           (SELECT count(*) FROM sent WHERE sent.kind = k.kind AND sent.user_id IN (SELECT id FROM control))
                    FROM (SELECT DISTINCT kind FROM kinds) k ORDER BY k.kind
                    """, logger: TestDatabase.logger).decode((String, Int64, Int64, Int64, Int64, Int64).self) {
                    byKind[kind] = (sent, heldOut, control, toHeldOut, toControl)
                }
                // Any line of the log at all, campaign or not, to a control-group user's device.
                let anyToControl = try await Self.count(client, """
                    SELECT count(*) FROM unnest(ARRAY['\(tokens.joined(separator: "','"))']::text[]) t(token)
                    JOIN devices dv ON dv.token = t.token CROSS JOIN settings st
                    WHERE herald_bucket10k('control:' || st.control_group_salt || ':' || dv.user_id) < st.control_group_pct * 100
                    """)
                let occurrences = try await Self.count(client, "SELECT count(*) FROM campaigns WHERE series_id = \(series)")
                let figures = byKind.keys.sorted().map { k in
                    let v = byKind[k]!
                    return "\(k): sent \(v.sent), held out \(v.heldOut) + control \(v.control), to held out \(v.toHeldOut), to control \(v.toControl)"
                }.joined(separator: "; ")
                print("fault suite [held out]: runs \(runs), accepted \(accepted.count), \(figures), "
                      + "recurring occurrences \(occurrences), any line to a control-group device \(anyToControl)")
                #expect(Set(byKind.keys) == ["one-off", "recurring", "on entry"])
                #expect(occurrences == 2)
                #expect(accepted.allSatisfy { $0.delivery != nil })
                #expect(anyToControl == 0)
                for (kind, v) in byKind {
                    #expect(v.toControl == 0, "\(kind): \(v.toControl) notifications to the control group")
                    // Not vacuous: each kind sent, and held users out both ways.
                    #expect(v.sent > 0 && v.control > 0, "\(kind): \(v)")
                    #expect(v.toHeldOut == 0, "\(kind): \(v.toHeldOut) notifications to held-out users")
                    #expect(v.heldOut > 0, "\(kind): no one held out of it")
                }
                // Everyone else got it: the log holds one line per device the ledger says was sent.
                let sentInLedger = try await Self.count(client, "SELECT count(*) FROM delivery_status WHERE status = 'sent'")
                #expect(accepted.count == sentInLedger)
            }
        }
    }
}
