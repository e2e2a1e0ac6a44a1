-- Herald schema: flash sales as Live Activities (DESIGN, contract 10).
--
--   * campaigns.live_activity (a one-off flash sale with an end) says the
--     sale also runs as a Live Activity; Herald reads it (Swift is its only
--     reader: a sale that does not read fails alone with its reason);
--   * the steps after the start (its updates and its end) are campaign rows
--     of their own, made by herald_sale_steps when the sale starts, as
--     occurrences are: each has its own ledger partition, so each device gets
--     each step once, with every guarantee of an alert; a step is approved as
--     its sale is, and follows its sale's pause, resume and cancel;
--   * push_to_start_tokens and live_activities hold what apps register:
--     each device's push-to-start token, and each running activity's update
--     token (with the step the device last showed, what it confirmed);
--   * sale_stock is the marketer's own system's count of what is left.
-- applied-if: SELECT to_regclass('public.live_activities') IS NOT NULL

ALTER TABLE campaigns ADD COLUMN live_activity jsonb
    CONSTRAINT "campaign live_activity must be a JSON object" CHECK (live_activity IS NULL OR jsonb_typeof(live_activity) = 'object');
ALTER TABLE campaigns ADD CONSTRAINT "only a one-off flash sale with an end runs as a Live Activity"
    CHECK (live_activity IS NULL OR (kind = 'flash_sale' AND repeat_unit IS NULL AND NOT on_segment_entry AND expires_at IS NOT NULL));
ALTER TABLE campaigns ADD COLUMN sale_id bigint REFERENCES campaigns (id) ON DELETE CASCADE;
ALTER TABLE campaigns ADD COLUMN sale_step integer;
ALTER TABLE campaigns ADD CONSTRAINT "a sale's step names its sale and its number (1 or more)"
    CHECK ((sale_id IS NULL) = (sale_step IS NULL) AND (sale_step IS NULL OR sale_step >= 1));
CREATE UNIQUE INDEX campaigns_sale_step_once ON campaigns (sale_id, sale_step) WHERE sale_id IS NOT NULL;
COMMENT ON COLUMN campaigns.live_activity IS 'the sale as a Live Activity: title, state, updates, stock, relevance, dismiss_after (docs/marketers.md)';
COMMENT ON COLUMN campaigns.sale_id IS 'the Live Activity sale this row is a step of (an update or the end)';

INSERT INTO campaign_approval_columns (column_name, written_by, withdraws, why) VALUES
    ('live_activity', 'marketer', 'content', 'what the lock screen and the Dynamic Island show'),
    ('sale_id',       'herald',   'series',  'set when a sale''s steps are made'),
    ('sale_step',     'herald',   'series',  'set when a sale''s steps are made');
GRANT INSERT (live_activity), UPDATE (live_activity) ON campaigns TO herald_marketer;

-- A step is approved as its sale is (a change to the sale withdraws both).
CREATE OR REPLACE FUNCTION herald_approved(p_campaign bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT NOT coalesce((SELECT require_approval FROM settings), false)
        OR EXISTS (SELECT 1 FROM campaigns c
                   WHERE c.id = coalesce((SELECT sale_id FROM campaigns WHERE id = p_campaign), p_campaign)
                     AND c.approved_at IS NOT NULL)
$$;

-- The steps after a sale's start, at the times Herald read from its
-- live_activity: step n at p_at[n], ending at p_until[n] (an update when the
-- next step falls due, the end at the dismissal date). Made once: a second
-- call makes nothing.
CREATE FUNCTION herald_sale_steps(p_sale bigint, p_at timestamptz[], p_until timestamptz[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    s campaigns%ROWTYPE;
    v_made integer := 0;
    v_id bigint;
BEGIN
    SELECT * INTO s FROM campaigns WHERE id = p_sale;
    IF NOT FOUND OR s.live_activity IS NULL THEN
        RAISE EXCEPTION 'campaign % is not a Live Activity sale', p_sale;
    END IF;
    IF cardinality(p_at) <> cardinality(p_until) OR cardinality(p_at) < 1 THEN
        RAISE EXCEPTION 'a sale''s steps need a time and an end each';
    END IF;
    FOR i IN 1 .. cardinality(p_at) LOOP
        INSERT INTO campaigns (name, kind, status, segment_id, content, default_locale, category_id, send_at, expires_at,
                               priority, collapse_id, quiet_hours, frequency_capped, sale_id, sale_step, created_by)
        VALUES (s.name || ' step ' || i, s.kind,
                CASE WHEN s.status IN ('paused', 'cancelled') THEN s.status ELSE 'scheduled' END,
                s.segment_id, s.content, s.default_locale, s.category_id, p_at[i], p_until[i],
                10, s.collapse_id, false, false, p_sale, i, s.created_by)
        ON CONFLICT (sale_id, sale_step) WHERE sale_id IS NOT NULL DO NOTHING
        RETURNING id INTO v_id;
        IF v_id IS NOT NULL THEN v_made := v_made + 1; END IF;
    END LOOP;
    RETURN v_made;
END $$;
REVOKE ALL ON FUNCTION herald_sale_steps(bigint, timestamptz[], timestamptz[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_sale_steps(bigint, timestamptz[], timestamptz[]) TO herald_job;

-- A sale's pause, resume and cancel hold for its steps not finished.
CREATE FUNCTION herald_sale_status_follows() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NEW.status IN ('paused', 'cancelled') THEN
        UPDATE campaigns SET status = NEW.status
        WHERE sale_id = NEW.id AND status IN ('scheduled', 'running', 'paused') AND status <> NEW.status;
    ELSIF OLD.status = 'paused' AND NEW.status IN ('scheduled', 'running', 'completed') THEN
        UPDATE campaigns SET status = 'scheduled' WHERE sale_id = NEW.id AND status = 'paused';
    END IF;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION herald_sale_status_follows() FROM PUBLIC;
CREATE TRIGGER campaigns_sale_status_follows AFTER UPDATE OF status ON campaigns
FOR EACH ROW WHEN (NEW.live_activity IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION herald_sale_status_follows();

CREATE TABLE push_to_start_tokens (
    device_id       bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    attributes_type text   NOT NULL
        CONSTRAINT "push-to-start attributes_type must be HeraldSaleAttributes" CHECK (attributes_type = 'HeraldSaleAttributes'),
    token           text   NOT NULL
        CONSTRAINT "push-to-start token must be hex, 64 to 200 characters" CHECK (token ~ '^[0-9a-f]{64,200}$'),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (device_id, attributes_type)
);

CREATE TABLE live_activities (
    campaign_id    bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    device_id      bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    update_token   text
        CONSTRAINT "activity update_token must be hex, 64 to 200 characters" CHECK (update_token ~ '^[0-9a-f]{64,200}$'),
    channel_id     text
        CONSTRAINT "activity channel_id must be base64, at most 64 characters" CHECK (channel_id ~ '^[A-Za-z0-9+/]{1,62}={0,2}$'),
    started_by     text   NOT NULL
        CONSTRAINT "activity started_by must be push or app" CHECK (started_by IN ('push', 'app')),
    confirmed_step integer
        CONSTRAINT "activity confirmed_step must be 0 or more" CHECK (confirmed_step >= 0),
    confirmed_at   timestamptz,
    registered_at  timestamptz NOT NULL DEFAULT now(),
    ended_at       timestamptz,
    CONSTRAINT "an activity has an update token or a channel, not both" CHECK ((update_token IS NULL) <> (channel_id IS NULL)),
    PRIMARY KEY (campaign_id, device_id)
);

CREATE TABLE sale_stock (
    campaign_id bigint PRIMARY KEY REFERENCES campaigns (id) ON DELETE CASCADE,
    stock_left  integer NOT NULL CONSTRAINT "sale stock_left must be 0 or more" CHECK (stock_left >= 0),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

GRANT SELECT, INSERT, UPDATE, DELETE ON push_to_start_tokens, live_activities TO herald_intake;
GRANT SELECT ON push_to_start_tokens, live_activities, sale_stock TO herald_job;
GRANT SELECT, INSERT, UPDATE, DELETE ON sale_stock TO herald_marketer;
GRANT SELECT ON live_activities TO herald_marketer;
-- The intake checks that a registration names a Live Activity sale.
GRANT SELECT (id, live_activity) ON campaigns TO herald_intake;

-- A step's pushes by status: its ledger rows, and the counts a prune kept
-- of the rows it dropped (Sql/0033), so these figures survive a prune.
CREATE VIEW analyst.live_activity_steps AS
WITH counts AS (
    SELECT d.campaign_id, d.status, count(*) AS n FROM deliveries d WHERE d.kind = 'campaign' GROUP BY 1, 2
    UNION ALL
    SELECT p.campaign_id, p.status, p.deliveries FROM pruned_delivery_counts p
)
SELECT st.sale_id AS campaign_id, st.sale_step AS step, st.send_at AS due_at, st.expires_at AS superseded_at, st.status,
       coalesce(sum(c.n), 0)::bigint AS targeted,
       coalesce(sum(c.n) FILTER (WHERE c.status = 'sent'), 0)::bigint AS sent,
       coalesce(sum(c.n) FILTER (WHERE c.status = 'expired'), 0)::bigint AS expired,
       coalesce(sum(c.n) FILTER (WHERE c.status = 'skipped'), 0)::bigint AS skipped,
       (SELECT count(*) FROM live_activities la WHERE la.campaign_id = st.sale_id AND la.confirmed_step >= st.sale_step) AS confirmed
FROM campaigns st LEFT JOIN counts c ON c.campaign_id = st.id
WHERE st.sale_id IS NOT NULL
GROUP BY st.sale_id, st.sale_step, st.send_at, st.expires_at, st.status;

-- Per sale: the activities started (by push-to-start and by the app),
-- those that confirmed an update and those ended on the device, beside its
-- steps' pushes.
CREATE VIEW analyst.live_activities AS
SELECT s.id AS campaign_id, s.name,
       count(la.device_id) FILTER (WHERE la.started_by = 'push') AS started_by_push,
       count(la.device_id) FILTER (WHERE la.started_by = 'app') AS started_by_app,
       count(la.device_id) FILTER (WHERE la.channel_id IS NOT NULL) AS on_channel,
       count(la.device_id) FILTER (WHERE la.confirmed_step >= 1) AS confirmed_an_update,
       count(la.device_id) FILTER (WHERE la.ended_at IS NOT NULL) AS ended_on_device,
       (SELECT count(*) FROM campaigns st WHERE st.sale_id = s.id) AS steps_after_start,
       (SELECT coalesce(sum(x.sent), 0)::bigint FROM analyst.live_activity_steps x WHERE x.campaign_id = s.id) AS step_pushes_sent
FROM campaigns s LEFT JOIN live_activities la ON la.campaign_id = s.id
WHERE s.live_activity IS NOT NULL
GROUP BY s.id, s.name;

-- Per device: what its activity of each sale confirmed it shows.
CREATE VIEW analyst.live_activity_devices AS
SELECT la.campaign_id, la.device_id, dv.user_id, la.started_by, la.channel_id IS NOT NULL AS on_channel,
       la.registered_at, la.confirmed_step, la.confirmed_at, la.ended_at
FROM live_activities la JOIN devices dv ON dv.id = la.device_id;

GRANT SELECT ON analyst.live_activities, analyst.live_activity_steps, analyst.live_activity_devices TO herald_analyst;
