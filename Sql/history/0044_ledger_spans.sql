-- Herald schema: the ledger by ranges (DESIGN, "The ledger by ranges: spans
-- and settlements"). A campaign's batch rows are leased by range under the
-- run's lease (a span), and a settlement commits how far APNs accepted them
-- (the span's watermark) with a row written only for what differs.
--
--   * status 'batch': a campaign row the snapshot wrote due now, sent on the
--     span path; its state is its span's until a settlement writes it;
--   * delivery_spans: one row per range of a campaign's ids, after < id <=
--     through, its committed watermark `settled`, the run holding it
--     (run_id, under runs.lease_expires_at) and its marks (each settlement's
--     watermark, commit time and run: the sent_at and claimed_by of the rows
--     it passed);
--   * herald_delivery_status: the effective status, the one rule; the view
--     delivery_status reads deliveries through it with today's columns;
--   * herald_claim_span: takes over the lowest span not held by a live run
--     at its watermark, or advances over the next batch rows;
--   * herald_settle: moves the run's spans' watermarks and writes the rows
--     that differ, fenced by the spans the run still holds;
--   * herald_release_spans: a run's spans open at their watermarks;
--   * herald_close_batch: writes `cancelled` or `expired` to a campaign's
--     batch rows no live run holds (past every span, or in the remainder of
--     a span whose run is gone); the cancel and archive triggers, expiry and
--     a release call it;
--   * herald_batch_done: no batch row is left to send (a campaign's completion).
-- applied-if: SELECT to_regclass('public.delivery_spans') IS NOT NULL

ALTER TABLE deliveries DROP CONSTRAINT "delivery status must be a known delivery status";
ALTER TABLE deliveries ADD CONSTRAINT "delivery status must be a known delivery status"
    CHECK (status IN ('queued', 'in_flight', 'sent', 'invalid', 'failed', 'expired', 'skipped', 'cancelled', 'held_out',
                      'batch'));

CREATE TABLE delivery_spans (
    campaign_id bigint        NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    after       bigint        NOT NULL,
    through     bigint        NOT NULL,
    settled     bigint        NOT NULL,
    run_id      bigint,
    marks       bigint[]      NOT NULL DEFAULT '{}',
    marked_at   timestamptz[] NOT NULL DEFAULT '{}',
    marked_by   bigint[]      NOT NULL DEFAULT '{}',
    PRIMARY KEY (campaign_id, through),
    CONSTRAINT "a span's watermark lies within it" CHECK (after < through AND settled BETWEEN after AND through),
    CONSTRAINT "a span's marks, their times and runs pair up"
        CHECK (cardinality(marks) = cardinality(marked_at) AND cardinality(marks) = cardinality(marked_by))
);
CREATE INDEX delivery_spans_run ON delivery_spans (run_id) WHERE run_id IS NOT NULL;
GRANT SELECT, INSERT, UPDATE ON delivery_spans TO herald_job;

-- Whether run p_run holds what it claimed: running, its lease not lapsed
-- (the rule of today's row claims, DeliveryLedger.claimable).
CREATE FUNCTION herald_run_holds(p_run bigint) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN p_run IS NOT NULL AND EXISTS (SELECT 1 FROM runs r WHERE r.id = p_run AND r.status = 'running'
                                                           AND r.lease_expires_at >= now());

-- The effective status of a ledger row (the one rule; LedgerStatusTests
-- holds its golden table). p_settled: the watermark of the span whose range
-- holds the row (NULL: none); p_held: that span's run holds it.
CREATE FUNCTION herald_delivery_status(p_status text, p_id bigint, p_settled bigint, p_held boolean) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN p_status IS DISTINCT FROM 'batch' THEN p_status
                WHEN p_id <= p_settled THEN 'sent'
                WHEN p_held THEN 'in_flight'
                ELSE 'queued' END;

-- The ledger as today's readers know it: a batch row reads as its span says
-- (sent at its mark's time, with the derived apns-id and one attempt; in
-- flight under its run; queued), every other row as it is. Four branches,
-- each read by ranges of a campaign's ids (so a reader's campaign or time
-- window reaches the spans and their marks before any ledger row):
--   1. rows that are not batch rows;
--   2. batch rows a mark passed: each mark (m_i, at_i, by_i) of a span covers
--      the ids (m_{i-1}, m_i], sent at at_i by run by_i (m_0 is the span's
--      lower bound);
--   3. batch rows above a span's watermark;
--   4. batch rows past every span of their campaign.
-- Each branch states its status with herald_delivery_status; the test
-- LedgerSpansTests.theViewFollowsTheRule compares it with the rule row by row.
CREATE VIEW delivery_status AS
SELECT d.id, d.campaign_id, d.device_id, d.user_id, d.status, d.not_before, d.apns_id, d.attempts, d.last_error,
       d.claimed_by, d.created_at, d.sent_at, d.updated_at, d.lease_expires_at, d.kind, d.config_etag, d.prompted_by,
       d.variant, d.refresh_open
FROM deliveries d WHERE d.status <> 'batch'
UNION ALL
SELECT d.id, sp.campaign_id, d.device_id, d.user_id, herald_delivery_status(d.status, d.id, sp.settled, NULL),
       d.not_before, herald_apns_id(d.id), 1, d.last_error, m.marked_by, d.created_at, m.marked_at, d.updated_at,
       NULL, d.kind, d.config_etag, d.prompted_by, d.variant, d.refresh_open
FROM delivery_spans sp
CROSS JOIN LATERAL (
    SELECT x.mark, x.marked_at, x.marked_by, coalesce(lag(x.mark) OVER (ORDER BY x.i), sp.after) AS low
    FROM unnest(sp.marks, sp.marked_at, sp.marked_by) WITH ORDINALITY AS x(mark, marked_at, marked_by, i)
) m
JOIN deliveries d ON d.campaign_id = sp.campaign_id AND d.id > m.low AND d.id <= m.mark AND d.status = 'batch'
UNION ALL
SELECT d.id, sp.campaign_id, d.device_id, d.user_id, herald_delivery_status(d.status, d.id, sp.settled, h.held),
       d.not_before, d.apns_id, d.attempts, d.last_error, CASE WHEN h.held THEN sp.run_id END, d.created_at, d.sent_at,
       d.updated_at, CASE WHEN h.held THEN r.lease_expires_at END, d.kind, d.config_etag, d.prompted_by, d.variant,
       d.refresh_open
FROM delivery_spans sp
LEFT JOIN runs r ON r.id = sp.run_id
CROSS JOIN LATERAL (SELECT herald_run_holds(sp.run_id) AS held) h
JOIN deliveries d ON d.campaign_id = sp.campaign_id AND d.id > sp.settled AND d.id <= sp.through AND d.status = 'batch'
WHERE sp.settled < sp.through
UNION ALL
SELECT d.id, e.campaign_id, d.device_id, d.user_id, herald_delivery_status(d.status, d.id, NULL, false),
       d.not_before, d.apns_id, d.attempts, d.last_error, NULL, d.created_at, d.sent_at, d.updated_at, NULL, d.kind,
       d.config_etag, d.prompted_by, d.variant, d.refresh_open
FROM (SELECT c.id AS campaign_id, (SELECT coalesce(max(x.through), 0) FROM delivery_spans x WHERE x.campaign_id = c.id) AS last
      FROM campaigns c) e
JOIN deliveries d ON d.campaign_id = e.campaign_id AND d.id > e.last AND d.status = 'batch';
GRANT SELECT ON delivery_spans, delivery_status TO herald_job;

-- One claim or close of a campaign's spans at a time (a transaction-scoped
-- advisory lock: it works through a transaction pooler).
CREATE FUNCTION herald_lock_spans(p_campaign bigint) RETURNS void
    LANGUAGE sql
    RETURN pg_advisory_xact_lock(1213352005, (p_campaign % 2147483647)::integer);

-- The claim of a span for p_run: under the campaign's lock, today's live
-- check (the run is running, the campaign is running and approved), which
-- renews the run's lease as a row claim does; then the lowest span with rows
-- above its watermark that no live run holds is taken over at its
-- watermark, or else the next p_n batch rows after every span become a new
-- span. Returns the range the run now holds, (after, through]: its batch rows
-- above `after` are the run's to send. No row: nothing to claim, or the run
-- or campaign is not live (`live` says which), in one row with NULL bounds.
CREATE FUNCTION herald_claim_span(p_campaign bigint, p_run bigint, p_n integer, p_lease float8)
RETURNS TABLE (live boolean, after bigint, through bigint, taken_over boolean)
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_after bigint;
    v_through bigint;
BEGIN
    PERFORM herald_lock_spans(p_campaign);
    UPDATE runs r SET lease_expires_at = greatest(r.lease_expires_at, now() + make_interval(secs => p_lease)),
        claimed_campaigns = CASE WHEN p_campaign = ANY (r.claimed_campaigns) THEN r.claimed_campaigns
                                 ELSE r.claimed_campaigns || p_campaign END
    WHERE r.id = p_run AND r.status = 'running'
      AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = p_campaign AND c.status IN ('scheduled', 'running')
                  AND herald_approved(c.id));
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, NULL::bigint, NULL::bigint, false;
        RETURN;
    END IF;
    -- Take over: the span keeps its rows up to its watermark; its remainder is this run's.
    UPDATE delivery_spans s SET run_id = p_run
    WHERE s.campaign_id = p_campaign AND s.through = (
        SELECT x.through FROM delivery_spans x
        WHERE x.campaign_id = p_campaign AND x.settled < x.through
          AND (x.run_id IS NULL OR (x.run_id <> p_run AND NOT herald_run_holds(x.run_id)))
        ORDER BY x.through LIMIT 1)
    RETURNING s.settled, s.through INTO v_after, v_through;
    IF FOUND THEN
        RETURN QUERY SELECT true, v_after, v_through, true;
        RETURN;
    END IF;
    -- Advance: the next p_n batch rows. The snapshot writes a campaign's
    -- slices one after another, so every batch row committed later has a
    -- higher id than these.
    SELECT coalesce(max(x.through), 0) INTO v_after FROM delivery_spans x WHERE x.campaign_id = p_campaign;
    SELECT max(w.id) INTO v_through FROM (
        SELECT d.id FROM deliveries d
        WHERE d.campaign_id = p_campaign AND d.kind = 'campaign' AND d.status = 'batch' AND d.id > v_after
        ORDER BY d.id LIMIT p_n) w;
    IF v_through IS NULL THEN
        RETURN QUERY SELECT true, NULL::bigint, NULL::bigint, false;
        RETURN;
    END IF;
    INSERT INTO delivery_spans (campaign_id, after, through, settled, run_id)
    VALUES (p_campaign, v_after, v_through, v_after, p_run);
    RETURN QUERY SELECT true, v_after, v_through, false;
END $$;

-- A settlement of p_run's spans, in one transaction:
--   * each span (s_campaign, s_through) still held by p_run has its
--     watermark moved to s_settled (never back) and the mark appended;
--   * each exception (e_*) of a batch row in a span the run still holds is
--     written: `in_flight` (a straggler, then claimed by p_run under its
--     lease, answered on the row path), or an outcome as a row write stores
--     one (DeliveryLedger.record): invalid, failed, skipped, queued or retry
--     (queued again after e_delay seconds, or cancelled with its campaign);
--   * devices answered invalid are invalidated, as a row write does.
-- Fenced: a span the run no longer holds (taken over after its lease
-- lapsed) takes neither watermark nor exception. Returns, per span passed
-- in, whether the run still held it, and the exceptions written in it.
CREATE FUNCTION herald_settle(
    p_run bigint,
    s_campaign bigint[], s_through bigint[], s_settled bigint[],
    e_campaign bigint[], e_id bigint[], e_device bigint[], e_status text[], e_error text[], e_attempts integer[],
    e_delay float8[], e_invalid_since float8[])
RETURNS TABLE (campaign_id bigint, through bigint, held boolean, exceptions integer)
LANGUAGE sql SET plan_cache_mode = force_custom_plan AS $$
    WITH held AS MATERIALIZED (
        -- The spans the run still holds, locked in one order (a takeover
        -- waits for this commit, and one that committed first is seen).
        SELECT s.campaign_id, s.after, s.through FROM delivery_spans s
        WHERE s.campaign_id = ANY (s_campaign)
          AND (s.campaign_id, s.through) IN (SELECT * FROM unnest(s_campaign, s_through))
          AND s.run_id = p_run
        ORDER BY s.campaign_id, s.through
        FOR UPDATE OF s
    ), marked AS (
        UPDATE delivery_spans s SET settled = x.settled, marks = s.marks || x.settled, marked_at = s.marked_at || now(),
            marked_by = s.marked_by || p_run
        FROM unnest(s_campaign, s_through, s_settled) AS x(campaign, through, settled)
        JOIN held h ON h.campaign_id = x.campaign AND h.through = x.through
        WHERE s.campaign_id = x.campaign AND s.through = x.through AND x.settled > s.settled AND x.settled <= s.through
    ), e AS (
        SELECT * FROM unnest(e_campaign, e_id, e_device, e_status, e_error, e_attempts, e_delay, e_invalid_since)
            AS e(campaign, id, device, status, error, attempts, delay, invalid_since)
    ), w AS (
        UPDATE deliveries d SET
            status = CASE WHEN e.status NOT IN ('queued', 'retry') THEN e.status
                          WHEN c.status = 'cancelled' THEN 'cancelled'
                          ELSE 'queued' END,
            last_error = CASE WHEN e.status IN ('queued', 'retry') AND c.status = 'cancelled' THEN 'campaign cancelled'
                              ELSE nullif(e.error, '') END,
            attempts = d.attempts + e.attempts,
            not_before = CASE WHEN e.status IN ('queued', 'retry')
                              THEN greatest(d.not_before, now() + make_interval(secs => e.delay))
                              ELSE d.not_before END,
            apns_id = herald_apns_id(d.id, (SELECT p.prefix FROM apns_id_prefix p)),
            claimed_by = CASE WHEN e.status = 'in_flight' THEN p_run END,
            lease_expires_at = CASE WHEN e.status = 'in_flight'
                                    THEN (SELECT r.lease_expires_at FROM runs r WHERE r.id = p_run) END,
            updated_at = now()
        FROM e JOIN held h ON h.campaign_id = e.campaign AND e.id > h.after AND e.id <= h.through
        JOIN campaigns c ON c.id = e.campaign
        WHERE d.campaign_id = ANY (e_campaign) AND d.campaign_id = e.campaign AND d.id = e.id AND d.status = 'batch'
        RETURNING d.campaign_id, d.id
    ), invalidated AS (
        UPDATE devices dv SET invalidated_at = to_timestamp(e.invalid_since), invalid_reason = nullif(e.error, '')
        FROM e JOIN w ON w.campaign_id = e.campaign AND w.id = e.id
        WHERE e.status = 'invalid' AND dv.id = e.device AND dv.invalidated_at IS NULL
          AND (dv.registered_at IS NULL OR dv.registered_at <= to_timestamp(e.invalid_since))
    )
    SELECT x.campaign, x.through, h.through IS NOT NULL,
           (SELECT count(*) FROM w WHERE h.through IS NOT NULL AND w.campaign_id = h.campaign_id
                                     AND w.id > h.after AND w.id <= h.through)::integer
    FROM unnest(s_campaign, s_through) AS x(campaign, through)
    LEFT JOIN held h ON h.campaign_id = x.campaign AND h.through = x.through
$$;

-- A campaign's batch rows no live run holds, written p_status ('cancelled'
-- or 'expired') with p_reason: those past every span, and those above the
-- watermark of a span whose run is gone or that is open (its rows are then
-- settled: the span ends at its watermark). Under the claims' lock, so that
-- no claim takes them meanwhile. Returns the rows written.
CREATE FUNCTION herald_close_batch(p_campaign bigint, p_status text, p_reason text) RETURNS bigint
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    v_last bigint;
    n bigint;
BEGIN
    IF p_status NOT IN ('cancelled', 'expired') THEN
        RAISE EXCEPTION 'herald_close_batch writes cancelled or expired, not %', p_status;
    END IF;
    PERFORM herald_lock_spans(p_campaign);
    SELECT coalesce(max(s.through), 0) INTO v_last FROM delivery_spans s WHERE s.campaign_id = p_campaign;
    WITH free AS (
        SELECT s.settled AS after, s.through FROM delivery_spans s
        WHERE s.campaign_id = p_campaign AND s.settled < s.through AND NOT herald_run_holds(s.run_id)
        UNION ALL SELECT v_last, 9223372036854775807
    ), w AS (
        UPDATE deliveries d SET status = p_status, last_error = p_reason, updated_at = now()
        FROM free f
        WHERE d.campaign_id = p_campaign AND d.status = 'batch' AND d.id > f.after AND d.id <= f.through
        RETURNING 1
    )
    SELECT count(*) INTO n FROM w;
    RETURN n;
END $$;

-- A run's spans open at their watermarks (a session's end, a stop, a run
-- declared gone): any run may take their remainders over. A campaign
-- cancelled or ended meanwhile has their remainders closed as it was.
CREATE FUNCTION herald_release_spans(p_run bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    c record;
    n bigint := 0;
BEGIN
    FOR c IN SELECT DISTINCT s.campaign_id, k.status, k.expires_at FROM delivery_spans s
             JOIN campaigns k ON k.id = s.campaign_id WHERE s.run_id = p_run ORDER BY s.campaign_id LOOP
        PERFORM herald_lock_spans(c.campaign_id);
        UPDATE delivery_spans s SET run_id = NULL WHERE s.run_id = p_run AND s.campaign_id = c.campaign_id;
        IF c.status = 'cancelled' THEN
            n := n + herald_close_batch(c.campaign_id, 'cancelled', 'campaign cancelled');
        ELSIF c.status = 'completed' AND c.expires_at <= now() THEN
            n := n + herald_close_batch(c.campaign_id, 'expired', 'campaign expired before delivery');
        END IF;
    END LOOP;
    RETURN n;
END $$;

-- A cancel or an archive closes the batch rows no run holds, as it cancels
-- queued rows (herald_campaign_cancelled, herald_campaign_archive); the
-- trigger's argument is the reason written. Whoever may cancel or archive a
-- campaign closes its rows, as those do.
CREATE FUNCTION herald_campaign_closed_batch() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    PERFORM herald_close_batch(NEW.id, 'cancelled', TG_ARGV[0]);
    RETURN NULL;
END $$;
CREATE TRIGGER campaigns_cancelled_batch AFTER UPDATE OF status ON campaigns
    FOR EACH ROW WHEN (NEW.status = 'cancelled' AND OLD.status IS DISTINCT FROM 'cancelled')
    EXECUTE FUNCTION herald_campaign_closed_batch('campaign cancelled');
CREATE TRIGGER campaigns_archived_batch AFTER UPDATE OF status ON campaigns
    FOR EACH ROW WHEN (NEW.status = 'archived' AND OLD.status IS DISTINCT FROM 'archived')
    EXECUTE FUNCTION herald_campaign_closed_batch('campaign archived');

-- Whether the campaign has a batch row still to send: above the watermark of
-- a span (only of a span no live run holds, unless p_held_too), or past
-- every span. herald_batch_done and herald_spans_due ask it.
CREATE FUNCTION herald_batch_left(p_campaign bigint, p_held_too boolean) RETURNS boolean
    LANGUAGE sql STABLE
    RETURN EXISTS (
        SELECT 1 FROM delivery_spans s
        WHERE s.campaign_id = p_campaign AND s.settled < s.through AND (p_held_too OR NOT herald_run_holds(s.run_id))
          AND EXISTS (SELECT 1 FROM deliveries d WHERE d.campaign_id = p_campaign AND d.status = 'batch'
                                                   AND d.id > s.settled AND d.id <= s.through))
    OR EXISTS (
        SELECT 1 FROM deliveries d
        WHERE d.campaign_id = p_campaign AND d.status = 'batch'
          AND d.id > coalesce((SELECT max(s.through) FROM delivery_spans s WHERE s.campaign_id = p_campaign), 0));

-- Whether every batch row of the campaign is settled or written. With no
-- queued or in-flight row, the campaign is done (CampaignStore.completeIfDone).
CREATE FUNCTION herald_batch_done(p_campaign bigint) RETURNS boolean
    LANGUAGE sql STABLE
    RETURN NOT herald_batch_left(p_campaign, true);

-- Whether a claim of the campaign's spans would find rows now (a run asks
-- before it ends a campaign's sending: rows of a slice committed after its
-- last claim are sent by it, not left to the next run).
CREATE FUNCTION herald_spans_due(p_campaign bigint) RETURNS boolean
    LANGUAGE sql STABLE
    RETURN herald_batch_left(p_campaign, false);
