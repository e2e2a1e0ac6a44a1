-- Journeys as a run moves their members (docs/DESIGN.md, contract 11): the graph of a
-- version, the members due, what each move writes, and the rows of a send step.
-- Statements of this file are run by Sources/Store/JourneyStore.swift.

-- name: steps
-- The steps of one version of a journey, with what a decision reads of each (a wait in
-- seconds or as a local time of day, a wait_for's timeout in seconds) and a send step's
-- message (its campaign).
SELECT s.step, s.kind, extract(epoch FROM s.wait_for)::float8,
       extract(hour FROM s.wait_until)::int4, extract(minute FROM s.wait_until)::int4, s.best_hour,
       extract(epoch FROM s.timeout)::float8, s.campaign_id
FROM journey_steps s
WHERE s.journey_id = :journey AND s.version = :version

-- name: edges
-- The edges of one version of a journey, in position order.
SELECT e.from_step, e.position, e.kind, e.to_step
FROM journey_edges e
WHERE e.journey_id = :journey AND e.version = :version
ORDER BY e.from_step, e.position

-- name: journey
-- What a run reads of a journey besides its steps: its first step (a journey's apps are
-- read where its rows are written, write-sends).
SELECT j.first_step FROM journeys j WHERE j.id = :journey

-- name: messages
-- The messages (campaigns) of the send steps of the running journeys: each needs its
-- ledger partition before a move writes its rows.
SELECT DISTINCT s.campaign_id
FROM journeys j JOIN journey_steps s ON s.journey_id = j.id AND s.kind = 'send'
WHERE j.status = 'running'

-- name: claim-members
-- Claims up to :limit active members of running journeys whose time has come (due_at,
-- through journey_members_due), locked for the transaction that writes their moves: a
-- kill or a failover before it commits leaves them as they were. With each, what its
-- decision reads: its step and since when, its user's zone, whether its goal was reached
-- (herald_journey_goal_reached), and which edges of its version hold for
-- it now (herald_journey_edge_holds, each edge listening to the message of its step's
-- of_step; a segment edge by whether one of the user's valid devices is in the segment),
-- written step:position; the transaction's time, the decisions' now; and, for a member of
-- a version with a wait until the best hour, its user's best hour (herald_best_hour).
-- Only the edges a decision can meet in this batch are evaluated (reach): those of the
-- member's step and of every step a chain of moves can reach from it without resting, a
-- chain resting only at a wait for a positive duration or a time of day (a wait until the
-- best hour goes on for a user without one; a wait_for goes on when an edge holds). The
-- edges of a listening step further on cost nothing to a member waiting before it.
-- Filled in by code: the fragment segment_cases (for each segment a segment edge of a
-- running journey names, WHEN its id THEN whether the member's user is in it, by the
-- segment's rule compiled for this statement; a segment not given reads as unknown, and
-- its edge does not hold).
WITH RECURSIVE reach AS (
    SELECT s.journey_id, s.version, s.step AS start, s.step
    FROM journey_steps s JOIN journeys j ON j.id = s.journey_id AND j.status = 'running'
    UNION
    SELECT r.journey_id, r.version, r.start, e.to_step
    FROM reach r
    JOIN journey_steps s ON s.journey_id = r.journey_id AND s.version = r.version AND s.step = r.step
    JOIN journey_edges e ON e.journey_id = r.journey_id AND e.version = r.version AND e.from_step = r.step
    WHERE e.to_step IS NOT NULL
      AND (r.step = r.start OR s.kind <> 'wait' OR s.best_hour OR s.wait_for <= interval '0')
), due AS (
    SELECT m.id FROM journey_members m
    WHERE m.state = 'active' AND m.due_at <= now()
      AND EXISTS (SELECT 1 FROM journeys j WHERE j.id = m.journey_id AND j.status = 'running')
    ORDER BY m.due_at
    LIMIT :limit
    FOR UPDATE OF m SKIP LOCKED
)
SELECT m.id, m.journey_id, m.version, m.step, m.reached_at, m.moves, coalesce(u.time_zone, 'UTC'),
       herald_journey_goal_reached(m.user_id, j.goal_event, m.entered_at),
       ARRAY(
           SELECT e.from_step || ':' || e.position
           FROM journey_edges e
           JOIN journey_steps s ON s.journey_id = e.journey_id AND s.version = e.version AND s.step = e.from_step
           LEFT JOIN journey_steps o ON o.journey_id = s.journey_id AND o.version = s.version AND o.step = s.of_step
           WHERE e.journey_id = m.journey_id AND e.version = m.version
             AND e.kind NOT IN ('next', 'timeout', 'else')
             -- (A CASE, so that no edge out of reach is evaluated whatever the plan's order.)
             AND CASE WHEN e.from_step IN (SELECT x.step FROM reach x
                                           WHERE x.journey_id = m.journey_id AND x.version = m.version AND x.start = m.step)
                      THEN herald_journey_edge_holds(e, m.user_id, m.entered_at, m.reached_at, o.campaign_id) END)
       || ARRAY(
           SELECT e.from_step || ':' || e.position
           FROM journey_edges e
           WHERE e.journey_id = m.journey_id AND e.version = m.version AND e.kind = 'segment'
             AND CASE WHEN e.from_step IN (SELECT x.step FROM reach x
                                           WHERE x.journey_id = m.journey_id AND x.version = m.version AND x.start = m.step)
                      THEN (CASE WHEN false THEN NULL::boolean {{segment_cases}} ELSE NULL END) = (e.rule->>'in')::boolean END),
       now(),
       CASE WHEN b.journey_id IS NOT NULL THEN herald_best_hour(m.user_id) END
FROM journey_members m
JOIN due ON due.id = m.id
JOIN journeys j ON j.id = m.journey_id
JOIN users u ON u.id = m.user_id
LEFT JOIN (SELECT DISTINCT journey_id, version FROM journey_steps WHERE best_hour) b
       ON b.journey_id = m.journey_id AND b.version = m.version
ORDER BY m.id

-- name: move-members
-- Writes where each claimed member rests after its decision (one row of the arrays each):
-- its step and since when, when a run looks at it next and whether an event wakes it
-- sooner, or how it left (done, goal, exited), and its count of moves.
WITH v AS (
    SELECT * FROM unnest(:ids::bigint[], :steps::text[], :states::text[], :reached::float8[], :due::float8[],
                         :waiting::bool[], :moves::int4[])
        AS v(id, step, state, reached, due, waiting, moves)
)
UPDATE journey_members m SET
    step = v.step, state = v.state, reached_at = to_timestamp(v.reached),
    due_at = CASE WHEN v.state = 'active' THEN to_timestamp(v.due) END,
    waiting = v.state = 'active' AND v.waiting, moves = v.moves,
    left_at = CASE WHEN v.state <> 'active' THEN now() END
FROM v WHERE m.id = v.id

-- name: record-transitions
-- Records the moves the decisions took, each with the member's count of moves (seq): a move
-- written twice is refused by the table's key. A position of -1 (the goal, taken from any
-- step) and a step of '' (out of the journey) are written NULL.
INSERT INTO journey_transitions (member_id, seq, journey_id, from_step, position, kind, to_step, run_id)
SELECT t.member, t.seq, t.journey, t.from_step, nullif(t.position, -1), t.kind, nullif(t.to_step, ''), t.run
FROM unnest(:members::bigint[], :seqs::int4[], :journeys::bigint[], :froms::text[], :positions::int4[],
            :kinds::text[], :tos::text[], :runs::bigint[])
    AS t(member, seq, journey, from_step, position, kind, to_step, run)

-- name: write-sends
-- Writes the ledger rows of the send steps the decisions reached: for each member and
-- message, a queued row for each of its user's valid devices of the journey's apps (not
-- opted out), sent by the message's plan like any campaign's rows (once per device: a
-- device its message reached already is left). Their ids are recorded in
-- delivery_id_ranges, where the app server finds a reply's campaign. Answers the rows
-- written.
WITH v AS (
    SELECT * FROM unnest(:members::bigint[], :messages::bigint[]) AS v(member, message)
), ins AS (
    INSERT INTO deliveries (campaign_id, device_id, user_id, status, not_before)
    SELECT v.message, dv.id, m.user_id, 'queued', now()
    FROM v
    JOIN journey_members m ON m.id = v.member
    JOIN journeys j ON j.id = m.journey_id
    JOIN users u ON u.id = m.user_id
    JOIN devices dv ON dv.user_id = m.user_id
    WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
      AND (j.apps IS NULL OR dv.app = ANY (j.apps))
    ORDER BY v.message, dv.id
    ON CONFLICT DO NOTHING
    RETURNING id, campaign_id
), ranges AS (
    INSERT INTO delivery_id_ranges (campaign_id, ids)
    SELECT campaign_id, int8range(min(id), max(id), '[]') FROM ins GROUP BY campaign_id
)
SELECT count(*)::bigint FROM ins

-- name: segment-entries
-- The running journeys entered by a segment, with its rule: each run enters the users in it
-- (enter-segment).
SELECT j.id, coalesce(s.rule, '{}'::jsonb)::text
FROM journeys j JOIN segments s ON s.id = j.entry_segment_id
WHERE j.status = 'running' AND j.entry = 'segment'
ORDER BY j.id

-- name: enter-segment
-- Enters into a journey the users of its segment who are not active members, as its
-- reentry allows (herald_journey_enter, the one entry rule): the users in the segment who
-- have not been members (never), not within reentry_after (after), or are not now
-- (always). Each run reads the whole segment, as a campaign on segment entry does.
-- Filled in by code: the fragment segment (the segment's rule, compiled for this
-- statement; it names devices dv and users u).
SELECT herald_journey_enter(:journey, ARRAY(
    SELECT DISTINCT u.id FROM users u JOIN devices dv ON dv.user_id = u.id
    WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM journey_members m WHERE m.journey_id = :journey AND m.user_id = u.id AND m.state = 'active')
      AND ({{segment}})))

-- name: enter-campaigns
-- Enters into each running journey entered by a campaign the users that campaign was sent
-- to (a notification of theirs accepted by APNs) who are not active members, as its
-- reentry allows (herald_journey_enter, the one entry rule). Each run reads the
-- campaign's sent rows, as a segment entry reads its segment. Answers how many entered.
SELECT coalesce(sum(herald_journey_enter(j.id, ARRAY(
    SELECT DISTINCT d.user_id FROM delivery_status d
    WHERE d.campaign_id = j.entry_campaign_id AND d.kind = 'campaign' AND d.status = 'sent' AND d.user_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM journey_members m WHERE m.journey_id = j.id AND m.user_id = d.user_id AND m.state = 'active')))), 0)::bigint
FROM journeys j
WHERE j.status = 'running' AND j.entry = 'campaign'

-- name: edge-segments
-- The segments the segment edges of running journeys name, with their rules: compiled into
-- claim-members.
SELECT DISTINCT g.id, coalesce(g.rule, '{}'::jsonb)::text
FROM journeys j
JOIN journey_edges e ON e.journey_id = j.id AND e.kind = 'segment'
JOIN segments g ON g.id::text = e.rule->>'segment_id'
WHERE j.status = 'running'
ORDER BY g.id

-- name: preview-journey
-- What `herald preview --journey` says of a journey: its name, status and version, its
-- entry in words, reentry, goal, holdout and apps.
SELECT j.name, j.status, j.version, j.first_step,
       CASE j.entry
           WHEN 'segment' THEN 'the segment ' || coalesce((SELECT s.name FROM segments s WHERE s.id = j.entry_segment_id), '?')
           WHEN 'conversion' THEN 'the conversion ' || j.entry_event
           WHEN 'reply' THEN 'a reply to campaign ' || j.entry_campaign_id || coalesce(' (action ' || j.entry_action || ')', '')
           WHEN 'campaign' THEN 'being sent campaign ' || j.entry_campaign_id
           ELSE 'a list of recipients'
       END,
       j.reentry || coalesce(' ' || j.reentry_after::text, ''), j.goal_event, j.holdout_pct,
       coalesce(array_to_string(j.apps, ', '), 'every app')
FROM journeys j WHERE j.id = :journey

-- name: preview-steps
-- The steps of one version of a journey as the preview prints them: kind, message (its
-- campaign's id, name and kind), wait, timeout and the step a wait_for listens to.
SELECT s.step, s.kind, s.campaign_id, c.name, c.kind,
       coalesce(s.wait_for::text, to_char(s.wait_until, 'HH24:MI') || ' on the user''s clock',
                CASE WHEN s.best_hour THEN 'the user''s best hour' END),
       s.timeout::text, s.of_step
FROM journey_steps s LEFT JOIN campaigns c ON c.id = s.campaign_id
WHERE s.journey_id = :journey AND s.version = :version
ORDER BY s.step

-- name: preview-edges
-- The edges of one version of a journey with their rules, in position order.
SELECT e.from_step, e.position, e.kind, e.rule::text, e.to_step
FROM journey_edges e
WHERE e.journey_id = :journey AND e.version = :version
ORDER BY e.from_step, e.position

-- name: preview-texts
-- Each locale's title and body of the messages of one version of a journey (its send
-- steps' campaigns), as written (templates unrendered).
SELECT s.step, l.locale, coalesce(l.content->>'title', l.content->>'title-loc-key', ''),
       coalesce(l.content->>'body', l.content->>'loc-key', '')
FROM journey_steps s JOIN campaigns c ON c.id = s.campaign_id,
     LATERAL jsonb_each(c.content) AS l(locale, content)
WHERE s.journey_id = :journey AND s.version = :version
ORDER BY s.step, l.locale

-- name: preview-at-steps
-- Where a journey's members are now: by step, the active ones and those of them waiting
-- for an event; then how many entered, left and were held out.
SELECT coalesce(m.step, ''), count(*) FILTER (WHERE m.state = 'active'),
       count(*) FILTER (WHERE m.state = 'active' AND m.waiting), count(*) FILTER (WHERE m.state <> 'held_out'),
       count(*) FILTER (WHERE m.state IN ('done', 'goal', 'exited')), count(*) FILTER (WHERE m.state = 'held_out')
FROM journey_members m WHERE m.journey_id = :journey
GROUP BY m.step ORDER BY m.step

-- name: preview-sample
-- A sample of a journey's active members for the preview's paths, made the first the claim
-- of due members takes (due at -infinity) in a transaction the preview rolls back; with
-- their users' external ids.
WITH s AS (
    SELECT m.id FROM journey_members m
    WHERE m.journey_id = :journey AND m.state = 'active'
    ORDER BY m.id LIMIT :sample
    FOR UPDATE SKIP LOCKED
)
UPDATE journey_members m SET due_at = '-infinity'
FROM s, users u WHERE m.id = s.id AND u.id = m.user_id
RETURNING m.id, u.external_id
