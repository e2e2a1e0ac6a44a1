-- Herald schema: a campaign's pace (docs/marketers.md, "Pace").
--
-- A campaign may set rate_per_minute (at most that many notifications a
-- minute) or finish_within (as fast as finishing in that time needs, from
-- its first send). The pace holds across every worker: each takes its send
-- slots from one row per campaign, one after the other, so that together
-- they never go faster (a generic cell rate algorithm with no burst
-- allowance: slots are evenly spaced, and an idle campaign earns no credit,
-- so a run that starts after a kill or a pause does not catch up in a burst).
-- Slots a worker took but never used (it was killed) are lost: the pace may
-- run slower than set, never faster.
-- applied-if: SELECT to_regclass('public.campaign_pace') IS NOT NULL

ALTER TABLE campaigns
    ADD COLUMN rate_per_minute integer,
    ADD COLUMN finish_within interval;

ALTER TABLE campaigns
    ADD CONSTRAINT "campaign rate_per_minute must be from 1 to 1000000 a minute"
        CHECK (rate_per_minute IS NULL OR rate_per_minute BETWEEN 1 AND 1000000),
    ADD CONSTRAINT "campaign finish_within must be from 1 minute to 7 days"
        CHECK (finish_within IS NULL OR (finish_within >= interval '1 minute' AND finish_within <= interval '7 days')),
    ADD CONSTRAINT "campaign sets rate_per_minute or finish_within, not both"
        CHECK (rate_per_minute IS NULL OR finish_within IS NULL);

-- The next free send slot of each paced campaign, and the rate in force (for
-- finish_within, worked out again from what is left at most every 30 s).
CREATE TABLE campaign_pace (
    campaign_id  bigint PRIMARY KEY REFERENCES campaigns (id) ON DELETE CASCADE,
    next_slot    timestamptz NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    rate         double precision NOT NULL DEFAULT 0,
    rate_at      timestamptz NOT NULL DEFAULT '-infinity'
);

-- Takes the next p_count send slots of a campaign: first_in, the seconds from
-- now until the first; spacing, the seconds between two. Both NULL when the
-- campaign has no pace. Concurrent callers take turns on the campaign's row.
CREATE FUNCTION herald_pace_reserve(p_campaign bigint, p_count integer,
                                    OUT first_in double precision, OUT spacing double precision)
LANGUAGE plpgsql AS $$
DECLARE
    v_per_minute integer;
    v_within     interval;
    v_pace       campaign_pace%ROWTYPE;
    v_rate       double precision;
    v_left       double precision;
    v_queued     bigint;
    v_now        timestamptz := clock_timestamp();
    v_start      timestamptz;
BEGIN
    SELECT rate_per_minute, finish_within INTO v_per_minute, v_within FROM campaigns WHERE id = p_campaign;
    IF v_per_minute IS NULL AND v_within IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO campaign_pace (campaign_id, next_slot, started_at) VALUES (p_campaign, v_now, v_now)
    ON CONFLICT (campaign_id) DO NOTHING;
    SELECT * INTO v_pace FROM campaign_pace WHERE campaign_id = p_campaign FOR UPDATE;
    IF v_per_minute IS NOT NULL THEN
        v_rate := v_per_minute;
    ELSIF v_pace.rate > 0 AND v_pace.rate_at > v_now - interval '30 seconds' THEN
        v_rate := v_pace.rate;
    ELSE
        SELECT count(*) INTO v_queued FROM deliveries WHERE campaign_id = p_campaign AND status = 'queued';
        v_left := greatest(extract(epoch FROM v_pace.started_at + v_within - v_now) / 60, 1.0 / 60);
        v_rate := least(greatest(1, ceil(v_queued / v_left)), 1000000);
        UPDATE campaign_pace SET rate = v_rate, rate_at = v_now WHERE campaign_id = p_campaign;
    END IF;
    spacing := 60.0 / v_rate;
    v_start := greatest(v_pace.next_slot, v_now);
    UPDATE campaign_pace SET next_slot = v_start + make_interval(secs => spacing * p_count)
    WHERE campaign_id = p_campaign;
    first_in := extract(epoch FROM v_start - v_now);
END $$;

GRANT SELECT, INSERT, UPDATE ON campaign_pace TO herald_job;
