-- Herald schema: a Live Activity sale's steps go out in order by construction
-- (DESIGN, contract 10, "Steps in order").
--
-- A step of a sale (an update or its end) is claimable only once its gate is
-- open, and its gate opens only when no delivery or broadcast of an earlier
-- step (the sale's start among them) is in flight under a live run's lease:
-- whatever the time, no step is claimed while an earlier one can still be on
-- the wire. Once a step's gate is open, every earlier step is superseded and
-- none of its rows is claimed again (what is left of it expires with it).
--   * sale_step_gates: when each step's gate opened;
--   * herald_step_state(campaign): 'clear', 'waits' (an earlier step is in
--     flight) or 'superseded' (a later step's gate is open); it opens the
--     gate when it finds the step clear. Every claim of a sale's start or
--     step holds a shared lock of the sale (an advisory lock, until its
--     transaction ends) and the gate opens under the exclusive one, so a
--     claim of an earlier step and the opening of a later gate never pass
--     each other unseen.
-- applied-if: SELECT to_regprocedure('public.herald_step_state(bigint)') IS NOT NULL

CREATE TABLE sale_step_gates (
    campaign_id bigint PRIMARY KEY REFERENCES campaigns (id) ON DELETE CASCADE,
    opened_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE sale_step_gates IS 'a sale''s step whose gate is open: no earlier step of its sale was in flight, and none is claimed again';

CREATE FUNCTION herald_step_state(p_campaign bigint) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_sale bigint;
    v_step integer;
    v_is_sale boolean;
    v_key integer;
    v_earlier bigint[];
BEGIN
    SELECT c.sale_id, c.sale_step, c.live_activity IS NOT NULL INTO v_sale, v_step, v_is_sale
    FROM campaigns c WHERE c.id = p_campaign;
    IF v_sale IS NULL THEN
        -- Not a step. A sale's start holds the sale's shared lock, as its steps do.
        IF v_is_sale THEN PERFORM pg_advisory_xact_lock_shared(4931, (p_campaign % 2147483647)::integer); END IF;
        RETURN 'clear';
    END IF;
    v_key := (v_sale % 2147483647)::integer;
    IF EXISTS (SELECT 1 FROM sale_step_gates WHERE campaign_id = p_campaign) THEN
        PERFORM pg_advisory_xact_lock_shared(4931, v_key);
    ELSE
        -- The gate may open: under the exclusive lock, so that a claim of an earlier step
        -- under way has committed (its rows read in flight) or has not begun (and will find
        -- this gate open). Taken at once, never raised from the shared one.
        PERFORM pg_advisory_xact_lock(4931, v_key);
    END IF;
    -- Each query of a volatile function sees what committed before it, the locks' holders too.
    IF EXISTS (SELECT 1 FROM sale_step_gates g JOIN campaigns st ON st.id = g.campaign_id
               WHERE st.sale_id = v_sale AND st.sale_step > v_step) THEN
        RETURN 'superseded';
    END IF;
    IF EXISTS (SELECT 1 FROM sale_step_gates WHERE campaign_id = p_campaign) THEN
        RETURN 'clear';
    END IF;
    v_earlier := ARRAY(SELECT v_sale UNION ALL SELECT id FROM campaigns WHERE sale_id = v_sale AND sale_step < v_step);
    -- A run names each campaign it claimed deliveries of (runs.claimed_campaigns): only the
    -- live runs that claimed an earlier step have their rows looked at.
    IF EXISTS (
        SELECT 1 FROM runs r
        WHERE r.status = 'running' AND r.lease_expires_at >= now() AND r.claimed_campaigns && v_earlier
          AND EXISTS (SELECT 1 FROM delivery_status d
                      WHERE d.campaign_id = ANY (v_earlier) AND d.status = 'in_flight' AND d.claimed_by = r.id))
    OR EXISTS (
        SELECT 1 FROM channel_pushes cp JOIN runs r ON r.id = cp.claimed_by
        WHERE cp.campaign_id = ANY (v_earlier) AND cp.status = 'in_flight'
          AND r.status = 'running' AND r.lease_expires_at >= now())
    THEN
        RETURN 'waits';
    END IF;
    INSERT INTO sale_step_gates (campaign_id) VALUES (p_campaign) ON CONFLICT DO NOTHING;
    RETURN 'clear';
END;
$$;
COMMENT ON FUNCTION herald_step_state(bigint) IS 'whether a sale''s step may be claimed now: clear, waits (an earlier step is in flight under a live lease) or superseded (a later step''s gate is open); opens the gate when clear';

REVOKE ALL ON FUNCTION herald_step_state(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_step_state(bigint) TO herald_job;
GRANT SELECT ON sale_step_gates TO herald_marketer;
