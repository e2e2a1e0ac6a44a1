-- Herald schema: recurring campaigns and campaigns sent on segment entry
-- (docs/marketers.md, "Recurring campaigns" and "Campaigns on segment entry").
--
-- Both are a *series*: the campaign row a marketer writes is a template that
-- is never sent itself; each run makes its due *occurrences*, campaign rows
-- of their own (series_id, occurrence), each with its own audience
-- snapshot, ledger rows, pace and figures. An occurrence is made once
-- however many runs or workers see it due: (series_id, occurrence) is unique.
--
-- A recurring series repeats every repeat_every repeat_unit from its
-- send_at (or send_at_local: then every occurrence is sent at that wall-clock
-- time in each user's zone), weekly on the days in repeat_on, monthly on
-- repeat_day, until repeat_until or for repeat_count occurrences. Which
-- moment is due is decided by the run (HeraldCore's Recurrence, the one
-- authority: the database only keeps each occurrence once); a moment that
-- passed while the series was paused, or before a later one came due, is
-- skipped, not made up.
--
-- A series with on_segment_entry sends to whoever is in its segment and has
-- not had it: each run adds those who entered since (a new registration, an
-- attribute that now matches), each user once, or again after resend_after.
-- Its occurrence stays open (open_until) and grows run by run; with
-- resend_after, each period of that length is an occurrence of its own.
-- applied-if: SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'campaigns' AND column_name = 'series_id')

ALTER TABLE campaigns
    ADD COLUMN repeat_unit      text,
    ADD COLUMN repeat_every     integer NOT NULL DEFAULT 1,
    ADD COLUMN repeat_on        text[],
    ADD COLUMN repeat_day       integer,
    ADD COLUMN repeat_until     timestamptz,
    ADD COLUMN repeat_count     integer,
    ADD COLUMN on_segment_entry boolean NOT NULL DEFAULT false,
    ADD COLUMN resend_after     interval,
    ADD COLUMN series_id        bigint REFERENCES campaigns (id),
    ADD COLUMN occurrence       integer,
    ADD COLUMN open_until       timestamptz,
    ADD COLUMN resumed_at       timestamptz;

COMMENT ON COLUMN campaigns.series_id IS 'the recurring or on-entry campaign this row is an occurrence of';
COMMENT ON COLUMN campaigns.open_until IS 'an on-entry occurrence takes new entrants at each run until then';
COMMENT ON COLUMN campaigns.resumed_at IS 'a series: when it was last resumed (moments before are skipped)';

ALTER TABLE campaigns
    ADD CONSTRAINT "campaign repeat_unit must be minute, hour, day, week or month"
        CHECK (repeat_unit IS NULL OR repeat_unit IN ('minute', 'hour', 'day', 'week', 'month')),
    ADD CONSTRAINT "campaign repeat_every must be from 1 to 1000"
        CHECK (repeat_every BETWEEN 1 AND 1000),
    ADD CONSTRAINT "campaign repeat_on is for repeat_unit week: mon, tue … sun"
        CHECK (repeat_on IS NULL OR (repeat_unit = 'week' AND cardinality(repeat_on) >= 1
               AND repeat_on <@ ARRAY['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'])),
    ADD CONSTRAINT "campaign repeat_day is for repeat_unit month, from 1 to 31"
        CHECK (repeat_day IS NULL OR (repeat_unit = 'month' AND repeat_day BETWEEN 1 AND 31)),
    ADD CONSTRAINT "campaign repeat_until must be after send_at, with repeat_unit"
        CHECK (repeat_until IS NULL OR (repeat_unit IS NOT NULL AND repeat_until > send_at)),
    ADD CONSTRAINT "campaign repeat_count must be at least 1, with repeat_unit"
        CHECK (repeat_count IS NULL OR (repeat_unit IS NOT NULL AND repeat_count >= 1)),
    ADD CONSTRAINT "campaign repeats (repeat_unit) or is on_segment_entry, not both"
        CHECK (repeat_unit IS NULL OR NOT on_segment_entry),
    ADD CONSTRAINT "campaign resend_after needs on_segment_entry, at least 1 minute"
        CHECK (resend_after IS NULL OR (on_segment_entry AND resend_after >= interval '1 minute')),
    ADD CONSTRAINT "campaign on_segment_entry is at send_at, not send_at_local"
        CHECK (NOT on_segment_entry OR send_at_local IS NULL),
    ADD CONSTRAINT "an occurrence (series_id) neither repeats nor is on entry"
        CHECK (series_id IS NULL OR (repeat_unit IS NULL AND NOT on_segment_entry AND occurrence >= 1)),
    ADD CONSTRAINT "campaign open_until is for occurrences of on-entry campaigns"
        CHECK (open_until IS NULL OR series_id IS NOT NULL);

CREATE UNIQUE INDEX campaigns_occurrence_once ON campaigns (series_id, occurrence) WHERE series_id IS NOT NULL;

-- The series a run looks at.
CREATE INDEX campaigns_series ON campaigns (id)
    WHERE (repeat_unit IS NOT NULL OR on_segment_entry) AND status IN ('scheduled', 'running');

-- Makes occurrence p_number of series p_series at p_at (a UTC moment; for a
-- series at send_at_local, the wall-clock moment given as UTC), a copy of
-- the series as it is now: content, media, segment, fields, variants, pace,
-- and the expiry window (expires_at - send_at) from its own send time. An
-- on-entry occurrence expires with the series and takes entrants until
-- p_open_until. Returns its id, or NULL when it exists already (made by
-- another run). The series' approval comes with it.
CREATE FUNCTION herald_occurrence(p_series bigint, p_number integer, p_at timestamptz, p_open_until timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    s campaigns%ROWTYPE;
    v_id bigint;
    v_send_at timestamptz;
    v_local timestamp;
BEGIN
    SELECT * INTO s FROM campaigns WHERE id = p_series;
    IF NOT FOUND OR (s.repeat_unit IS NULL AND NOT s.on_segment_entry) THEN
        RAISE EXCEPTION 'campaign % is neither recurring nor on segment entry', p_series;
    END IF;
    IF s.send_at_local IS NOT NULL THEN
        v_local := p_at AT TIME ZONE 'UTC';
        v_send_at := v_local AT TIME ZONE 'Etc/GMT-14';
    ELSE
        v_send_at := p_at;
    END IF;
    INSERT INTO campaigns (name, kind, status, segment_id, content, default_locale, media_url, media_type,
                           category_id, custom, sensitive, send_at, send_at_local, local_missed, expires_at,
                           priority, collapse_id, thread_id, interruption_level, relevance_score, sound,
                           quiet_hours, frequency_capped, rate_per_minute, finish_within,
                           series_id, occurrence, open_until)
    VALUES (s.name || ' #' || p_number, s.kind, 'scheduled', s.segment_id, s.content, s.default_locale,
            s.media_url, s.media_type, s.category_id, s.custom, s.sensitive, v_send_at, v_local,
            s.local_missed,
            CASE WHEN s.on_segment_entry THEN s.expires_at
                 ELSE v_send_at + (s.expires_at - s.send_at) END,
            s.priority, s.collapse_id, s.thread_id, s.interruption_level, s.relevance_score, s.sound,
            s.quiet_hours, s.frequency_capped, s.rate_per_minute, s.finish_within,
            p_series, p_number, CASE WHEN s.on_segment_entry THEN coalesce(p_open_until, 'infinity') END)
    ON CONFLICT (series_id, occurrence) WHERE series_id IS NOT NULL DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO campaign_variants (campaign_id, name, share, content, media_url, media_type)
    SELECT v_id, name, share, content, media_url, media_type FROM campaign_variants WHERE campaign_id = p_series;
    -- Written by the series' author, approved as the series is.
    PERFORM set_config('herald.approving', 'on', true);
    UPDATE campaigns SET created_by = s.created_by, approved_by = s.approved_by, approved_at = s.approved_at
    WHERE id = v_id;
    PERFORM set_config('herald.approving', 'off', true);
    UPDATE campaigns SET status = 'running', started_at = coalesce(started_at, now())
    WHERE id = p_series AND status = 'scheduled';
    RETURN v_id;
END $$;
REVOKE ALL ON FUNCTION herald_occurrence(bigint, integer, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_occurrence(bigint, integer, timestamptz, timestamptz) TO herald_job;

-- At each run, the open occurrences of an on-entry series look at their
-- segment again: their snapshot restarts from the first device (the rows
-- written stay; only those who entered since are added). Returns how many.
CREATE FUNCTION herald_reopen_entries(p_series bigint) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_rows integer;
BEGIN
    UPDATE campaigns SET snapshot_at = now(), snapshot_through = 0
    WHERE series_id = p_series AND status IN ('scheduled', 'running') AND open_until > now()
      AND snapshot_at IS NOT NULL AND snapshot_through IS NULL;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    RETURN v_rows;
END $$;
REVOKE ALL ON FUNCTION herald_reopen_entries(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_reopen_entries(bigint) TO herald_job;

-- Pausing a series pauses its occurrences under way and makes no new one;
-- resuming resumes them and continues with the next moment (resumed_at:
-- those that passed meanwhile are skipped); cancelling cancels them.
CREATE FUNCTION herald_series_status() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NEW.repeat_unit IS NULL AND NOT NEW.on_segment_entry THEN
        RETURN NEW;
    END IF;
    IF NEW.status = 'paused' AND OLD.status IN ('scheduled', 'running') THEN
        UPDATE campaigns SET status = 'paused' WHERE series_id = NEW.id AND status IN ('scheduled', 'running');
    ELSIF OLD.status = 'paused' AND NEW.status IN ('scheduled', 'running') THEN
        NEW.resumed_at := now();
        UPDATE campaigns SET status = CASE WHEN started_at IS NULL THEN 'scheduled' ELSE 'running' END
        WHERE series_id = NEW.id AND status = 'paused';
    ELSIF NEW.status IN ('cancelled', 'archived') AND OLD.status NOT IN ('cancelled', 'archived', 'completed', 'failed') THEN
        UPDATE campaigns SET status = 'cancelled' WHERE series_id = NEW.id AND status IN ('scheduled', 'running', 'paused');
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER campaigns_series_status BEFORE UPDATE OF status ON campaigns
FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status) EXECUTE FUNCTION herald_series_status();

-- A change to a series' schedule is a change of schedule to its approval.
CREATE OR REPLACE FUNCTION herald_campaign_approval_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_changed text[] := ARRAY[]::text[];
BEGIN
    IF current_setting('herald.approving', true) IS DISTINCT FROM 'on' THEN
        IF TG_OP = 'INSERT' THEN
            IF NEW.approved_by IS NOT NULL OR NEW.approved_at IS NOT NULL THEN
                RAISE EXCEPTION 'a campaign is approved with SELECT herald_approve(id), by someone other than its author';
            END IF;
            NEW.created_by := session_user;
            RETURN NEW;
        END IF;
        IF NEW.approved_by IS DISTINCT FROM OLD.approved_by OR NEW.approved_at IS DISTINCT FROM OLD.approved_at THEN
            RAISE EXCEPTION 'a campaign is approved with SELECT herald_approve(%), by someone other than its author', OLD.id;
        END IF;
        IF NEW.created_by IS DISTINCT FROM OLD.created_by THEN
            RAISE EXCEPTION 'a campaign''s author (created_by) cannot be changed';
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.approved_at IS NOT NULL AND NEW.approved_at IS NOT NULL THEN
        IF NEW.content IS DISTINCT FROM OLD.content THEN v_changed := array_append(v_changed, 'content'); END IF;
        IF NEW.media_url IS DISTINCT FROM OLD.media_url OR NEW.media_type IS DISTINCT FROM OLD.media_type THEN
            v_changed := array_append(v_changed, 'media'); END IF;
        IF NEW.segment_id IS DISTINCT FROM OLD.segment_id THEN v_changed := array_append(v_changed, 'segment'); END IF;
        IF NEW.category_id IS DISTINCT FROM OLD.category_id THEN v_changed := array_append(v_changed, 'category'); END IF;
        IF NEW.sensitive IS DISTINCT FROM OLD.sensitive OR NEW.custom IS DISTINCT FROM OLD.custom THEN
            v_changed := array_append(v_changed, 'fields'); END IF;
        IF NEW.send_at IS DISTINCT FROM OLD.send_at OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
           OR NEW.repeat_unit IS DISTINCT FROM OLD.repeat_unit OR NEW.repeat_every IS DISTINCT FROM OLD.repeat_every
           OR NEW.repeat_on IS DISTINCT FROM OLD.repeat_on OR NEW.repeat_day IS DISTINCT FROM OLD.repeat_day
           OR NEW.repeat_until IS DISTINCT FROM OLD.repeat_until OR NEW.repeat_count IS DISTINCT FROM OLD.repeat_count
           OR NEW.on_segment_entry IS DISTINCT FROM OLD.on_segment_entry OR NEW.resend_after IS DISTINCT FROM OLD.resend_after THEN
            v_changed := array_append(v_changed, 'schedule'); END IF;
        IF NEW.rate_per_minute IS DISTINCT FROM OLD.rate_per_minute OR NEW.finish_within IS DISTINCT FROM OLD.finish_within THEN
            v_changed := array_append(v_changed, 'pace'); END IF;
        IF cardinality(v_changed) > 0 THEN
            NEW.approved_by := NULL;
            NEW.approved_at := NULL;
            INSERT INTO campaign_approvals (campaign_id, action, by_role, reason)
            VALUES (OLD.id, 'withdrawn', session_user, 'changed: ' || array_to_string(v_changed, ', '));
        END IF;
    END IF;
    RETURN NEW;
END $$;

-- Figures by occurrence, and by series.
CREATE VIEW analyst.occurrences AS
SELECT o.series_id, s.name AS series, o.occurrence, o.id AS campaign_id, o.status,
       o.send_at, o.send_at_local, o.open_until, o.started_at, o.completed_at,
       f.targeted, f.sent, f.skipped, f.expired, f.failed, f.replies, f.responding_devices, f.response_rate_pct
FROM campaigns o
JOIN campaigns s ON s.id = o.series_id
JOIN analyst.campaign_funnel f ON f.campaign_id = o.id;

CREATE VIEW analyst.series AS
SELECT s.id AS series_id, s.name, s.kind, s.status,
       CASE WHEN s.on_segment_entry THEN 'on segment entry' ELSE 'recurring' END AS series_kind,
       s.repeat_unit, s.repeat_every, s.repeat_on, s.repeat_day, s.repeat_until, s.repeat_count,
       s.resend_after, s.send_at, s.send_at_local,
       count(o.campaign_id) AS occurrences,
       max(o.send_at) AS last_occurrence_at,
       coalesce(sum(o.targeted), 0)::bigint AS targeted,
       coalesce(sum(o.sent), 0)::bigint AS sent_total,
       coalesce(sum(o.replies), 0)::bigint AS replies,
       round(100.0 * coalesce(sum(o.responding_devices), 0) / nullif(sum(o.sent), 0), 1) AS response_rate_pct
FROM campaigns s
LEFT JOIN analyst.occurrences o ON o.series_id = s.id
WHERE s.repeat_unit IS NOT NULL OR s.on_segment_entry
GROUP BY s.id;

-- A paced campaign's pace as set and as achieved: the rate over its sending
-- span (first to last notification APNs accepted), and its busiest minute.
CREATE VIEW analyst.pace AS
WITH sent AS (
    SELECT d.campaign_id, count(*) AS sent, min(d.sent_at) AS first_sent, max(d.sent_at) AS last_sent
    FROM deliveries d
    WHERE d.kind = 'campaign' AND d.status = 'sent'
      AND d.campaign_id IN (SELECT id FROM campaigns WHERE rate_per_minute IS NOT NULL OR finish_within IS NOT NULL)
    GROUP BY d.campaign_id
), busiest AS (
    SELECT campaign_id, max(n) AS busiest_minute
    FROM (SELECT d.campaign_id, count(*) AS n FROM deliveries d
          WHERE d.kind = 'campaign' AND d.status = 'sent'
            AND d.campaign_id IN (SELECT campaign_id FROM sent)
          GROUP BY d.campaign_id, date_trunc('minute', d.sent_at)) m
    GROUP BY campaign_id
)
SELECT c.id AS campaign_id, c.name, c.rate_per_minute, c.finish_within,
       coalesce(c.rate_per_minute::numeric,
                round(f.targeted / greatest(extract(epoch FROM c.finish_within) / 60, 1), 1)) AS set_per_minute,
       s.sent, s.first_sent, s.last_sent,
       round((s.sent - 1) / nullif(extract(epoch FROM s.last_sent - s.first_sent) / 60, 0), 1) AS achieved_per_minute,
       b.busiest_minute
FROM campaigns c
JOIN sent s ON s.campaign_id = c.id
JOIN analyst.campaign_funnel f ON f.campaign_id = c.id
LEFT JOIN busiest b ON b.campaign_id = c.id;

GRANT SELECT ON analyst.occurrences, analyst.series, analyst.pace TO herald_analyst;
