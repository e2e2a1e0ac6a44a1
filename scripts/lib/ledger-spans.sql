-- The ledger by ranges (DESIGN, "The ledger by ranges: spans and
-- settlements"): a PROTOTYPE of its tables and statements, for the
-- measurement of scripts/bench-ledger only. It is NOT a migration: the
-- benchmark loads it into its own throwaway database after `herald migrate`,
-- the migrator never reads it, and nothing in Herald calls what it defines.
-- It has what the measurement needs and no more: the claim only advances
-- (no takeover of an open or lapsed span), the settlement moves one span's
-- watermark, and there is no release, cancel, effective-status view or
-- device invalidation.
--
--   * the status check of deliveries also allows 'batch' (a batch row);
--   * deliveries_by_span: a partitioned table shaped like deliveries (LIKE:
--     its columns, defaults, checks and the id sequence they draw from),
--     with the index set DESIGN gives a campaign partition on the span path:
--     (id), and UNIQUE (device_id, campaign_id) WHERE kind = 'campaign' (the
--     snapshot's ON CONFLICT arbiter and the delete-a-device probe). A
--     partition of deliveries itself cannot have fewer indexes than
--     deliveries (ATTACH makes the missing ones), hence a parent of its own;
--     its partitions are made by herald_span_partition, at fillfactor 100;
--   * delivery_spans: one row per lease of a range of one campaign's ids,
--     after < id <= through, its committed watermark `settled` and its marks;
--   * herald_claim_span(campaign, run, n): the claim (one call, no row written);
--   * herald_settle(run, campaign, settled, ids, statuses): one settlement.

ALTER TABLE deliveries DROP CONSTRAINT "delivery status must be a known delivery status",
    ADD CONSTRAINT "delivery status must be a known delivery status"
        CHECK (status IN ('queued', 'in_flight', 'sent', 'invalid', 'failed', 'expired', 'skipped', 'cancelled',
                          'held_out', 'batch'));

CREATE TABLE deliveries_by_span (LIKE deliveries INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED
                                 INCLUDING STORAGE)
    PARTITION BY LIST (campaign_id);
CREATE INDEX deliveries_by_span_id ON deliveries_by_span (id);
CREATE UNIQUE INDEX deliveries_by_span_once ON deliveries_by_span (device_id, campaign_id) WHERE kind = 'campaign';

-- The campaign's partition of deliveries_by_span, as herald_delivery_partition
-- makes one of deliveries (the same check that it holds one campaign), but
-- written once: fillfactor 100.
CREATE FUNCTION herald_span_partition(campaign bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    part text := 'deliveries_by_span_c' || campaign;
BEGIN
    EXECUTE format('CREATE TABLE %I PARTITION OF deliveries_by_span FOR VALUES IN (%s) WITH (fillfactor = 100)',
                   part, campaign);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (campaign_id IS NOT NULL AND campaign_id = %s)',
                   part, part || '_campaign', campaign);
END $$;

CREATE TABLE delivery_spans (
    campaign_id bigint NOT NULL,
    after       bigint NOT NULL,
    through     bigint NOT NULL,
    settled     bigint NOT NULL,
    run_id      bigint,
    marks       bigint[] NOT NULL DEFAULT '{}',
    marked_at   timestamptz[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (campaign_id, through),
    CONSTRAINT "a span's watermark lies within it" CHECK (after < through AND settled BETWEEN after AND through)
);

-- The claim: under the campaign's advisory lock, today's live check (the run
-- is running, the campaign is running and approved) renewing the run's lease
-- as today's claim does; then the next n rows after the campaign's highest
-- `through` become a span of the run, and its batch rows are returned with
-- what a send needs, joined to devices and users as today's claim is. No
-- ledger row is written. Rows whose device or user changed since the
-- snapshot are left out (the design writes them `skipped` in this call).
-- Planned at each call (force_custom_plan), as today's claim is: a generic
-- plan cannot know that a window is n rows of one partition.
CREATE FUNCTION herald_claim_span(p_campaign bigint, p_run bigint, p_n integer, p_lease float8 DEFAULT 300)
RETURNS TABLE (id bigint, device_id bigint, token text, environment text, locale text, public_key text,
               key_id text, apns_id uuid, variant text, app text)
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_after bigint;
BEGIN
    -- One claim of a campaign at a time (works through a transaction pooler).
    PERFORM pg_advisory_xact_lock(48455241, p_campaign::integer);
    UPDATE runs r SET lease_expires_at = greatest(r.lease_expires_at, now() + make_interval(secs => p_lease)),
        claimed_campaigns = CASE WHEN p_campaign = ANY (r.claimed_campaigns) THEN r.claimed_campaigns
                                 ELSE r.claimed_campaigns || p_campaign END
    WHERE r.id = p_run AND r.status = 'running'
      AND EXISTS (SELECT 1 FROM campaigns c WHERE c.id = p_campaign AND c.status IN ('scheduled', 'running')
                  AND herald_approved(c.id));
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT coalesce(max(s.through), 0) INTO v_after FROM delivery_spans s WHERE s.campaign_id = p_campaign;
    RETURN QUERY
    WITH win AS MATERIALIZED (
        SELECT d.id, d.device_id, d.user_id, d.status, d.variant FROM deliveries_by_span d
        WHERE d.campaign_id = p_campaign AND d.id > v_after
        ORDER BY d.id LIMIT p_n
    ), span AS (
        INSERT INTO delivery_spans (campaign_id, after, through, settled, run_id)
        SELECT p_campaign, v_after, max(w.id), v_after, p_run FROM win w HAVING count(*) > 0
        RETURNING through
    )
    SELECT w.id, w.device_id, dv.token, dv.environment, coalesce(dv.locale, u.locale), dv.public_key, dv.key_id,
           herald_apns_id(w.id, (SELECT p.prefix FROM apns_id_prefix p)), w.variant, dv.app
    FROM win w JOIN devices dv ON dv.id = w.device_id JOIN users u ON u.id = w.user_id
    WHERE w.status = 'batch' AND dv.invalidated_at IS NULL AND u.opted_out_at IS NULL AND dv.user_id = w.user_id
      AND EXISTS (SELECT 1 FROM span)
    ORDER BY w.id;
END $$;

-- A settlement of one span of the run: its watermark moves to p_settled (an
-- id of the span) and the mark is appended; the exceptions (ids and their
-- statuses) are written, only those the watermark passes. Fenced: only a
-- span held by p_run, only rows within it. Returns the exceptions written,
-- -1 when no span of the run holds p_settled (nothing is written).
CREATE FUNCTION herald_settle(p_run bigint, p_campaign bigint, p_settled bigint, p_ids bigint[], p_statuses text[])
RETURNS integer
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    v_after bigint;
    n integer := 0;
BEGIN
    UPDATE delivery_spans s SET settled = greatest(s.settled, p_settled), marks = s.marks || p_settled,
        marked_at = s.marked_at || now()
    WHERE s.campaign_id = p_campaign AND s.run_id = p_run AND s.after < p_settled
      AND s.through = (SELECT min(x.through) FROM delivery_spans x
                       WHERE x.campaign_id = p_campaign AND x.through >= p_settled)
    RETURNING s.after INTO v_after;
    IF NOT FOUND THEN
        RAISE WARNING 'run % holds no span of campaign % with id %: nothing settled', p_run, p_campaign, p_settled;
        RETURN -1;
    END IF;
    IF cardinality(p_ids) > 0 THEN
        UPDATE deliveries_by_span d SET status = e.status, attempts = d.attempts + 1,
            sent_at = CASE WHEN e.status = 'sent' THEN now() END, updated_at = now()
        FROM unnest(p_ids, p_statuses) AS e(id, status)
        WHERE d.campaign_id = p_campaign AND d.id = e.id AND d.id > v_after AND d.id <= p_settled
          AND d.status = 'batch';
        GET DIAGNOSTICS n = ROW_COUNT;
    END IF;
    RETURN n;
END $$;
