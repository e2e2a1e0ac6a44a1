-- Herald schema: a Live Activity sale's broadcast channels (DESIGN, contract 10).
--
--   * activity_channels: the channel Herald made for a sale, one per app and
--     APNs environment its push-to-start devices are in (a channel belongs
--     to one bundle in one environment), until it is deleted after the
--     sale's dismissal date;
--   * channel_pushes: the ledger of a step sent to a channel, one row per
--     step and channel, claimed under a run's lease as a delivery is: once
--     through kills and outages, a transient answer retried, what is left
--     when the next step falls due expired.
-- applied-if: SELECT to_regclass('public.channel_pushes') IS NOT NULL

CREATE TABLE activity_channels (
    campaign_id bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    app         text   NOT NULL,
    environment text   NOT NULL
        CONSTRAINT "channel environment must be production or sandbox" CHECK (environment IN ('production', 'sandbox')),
    channel_id  text   NOT NULL
        CONSTRAINT "channel_id must be base64, at most 64 characters" CHECK (channel_id ~ '^[A-Za-z0-9+/]{1,62}={0,2}$'),
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz,
    PRIMARY KEY (campaign_id, app, environment)
);
COMMENT ON TABLE activity_channels IS 'the broadcast channels Herald made for a Live Activity sale (one per app and environment)';

CREATE TABLE channel_pushes (
    campaign_id     bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    app             text   NOT NULL,
    environment     text   NOT NULL,
    channel_id      text   NOT NULL,
    status          text   NOT NULL DEFAULT 'queued'
        CONSTRAINT "channel push status: queued, in_flight, sent, failed or expired"
        CHECK (status IN ('queued', 'in_flight', 'sent', 'failed', 'expired')),
    claimed_by      bigint REFERENCES runs (id) ON DELETE SET NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    apns_request_id uuid,
    sent_at         timestamptz,
    last_error      text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, app, environment)
);
COMMENT ON TABLE channel_pushes IS 'a sale''s update or end sent once to each of its channels (the step''s campaign row)';

GRANT SELECT, INSERT, UPDATE ON activity_channels, channel_pushes TO herald_job;
GRANT SELECT ON activity_channels, channel_pushes TO herald_marketer;

-- A step's pushes by status: its ledger rows, and the counts a prune kept
-- of the rows it dropped (Sql/0033), so these figures survive a prune; its
-- broadcasts, one per channel.
CREATE OR REPLACE VIEW analyst.live_activity_steps AS
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
       (SELECT count(*) FROM live_activities la WHERE la.campaign_id = st.sale_id AND la.confirmed_step >= st.sale_step) AS confirmed,
       (SELECT count(*) FROM channel_pushes cp WHERE cp.campaign_id = st.id AND cp.status = 'sent') AS broadcasts_sent,
       (SELECT count(*) FROM channel_pushes cp WHERE cp.campaign_id = st.id AND cp.status IN ('failed', 'expired')) AS broadcasts_not_sent
FROM campaigns st LEFT JOIN counts c ON c.campaign_id = st.id
WHERE st.sale_id IS NOT NULL
GROUP BY st.id, st.sale_id, st.sale_step, st.send_at, st.expires_at, st.status;

-- Per sale, beside the devices: its channels and the broadcasts they carried.
CREATE OR REPLACE VIEW analyst.live_activities AS
SELECT s.id AS campaign_id, s.name,
       count(la.device_id) FILTER (WHERE la.started_by = 'push') AS started_by_push,
       count(la.device_id) FILTER (WHERE la.started_by = 'app') AS started_by_app,
       count(la.device_id) FILTER (WHERE la.channel_id IS NOT NULL) AS on_channel,
       count(la.device_id) FILTER (WHERE la.confirmed_step >= 1) AS confirmed_an_update,
       count(la.device_id) FILTER (WHERE la.ended_at IS NOT NULL) AS ended_on_device,
       (SELECT count(*) FROM campaigns st WHERE st.sale_id = s.id) AS steps_after_start,
       (SELECT coalesce(sum(x.sent), 0)::bigint FROM analyst.live_activity_steps x WHERE x.campaign_id = s.id) AS step_pushes_sent,
       (SELECT count(*) FROM activity_channels ac WHERE ac.campaign_id = s.id) AS channels,
       (SELECT coalesce(sum(x.broadcasts_sent), 0)::bigint FROM analyst.live_activity_steps x WHERE x.campaign_id = s.id) AS broadcasts_sent
FROM campaigns s LEFT JOIN live_activities la ON la.campaign_id = s.id
WHERE s.live_activity IS NOT NULL
GROUP BY s.id, s.name;

GRANT SELECT ON analyst.live_activities, analyst.live_activity_steps TO herald_analyst;
