-- Herald schema: holdout groups, conversions and lift (docs/analysts.md,
-- "Did it work? Holdouts and lift").
--
-- A campaign may hold out a share of its users (holdout_pct): they are
-- written to its ledger as 'held_out' and never sent. A deployment may keep
-- a global control group (settings.control_group_pct) that no campaign
-- reaches, for as long as its salt stays the same. Who is held out is a hash,
-- stable per user: bucket(text) = floor(u * 10000 / 2^32), u the first 32 bits
-- (big-endian) of md5(text); a user is held out of a campaign when
-- bucket('holdout:<campaign>:<user id>') < holdout_pct * 100 (<campaign>: the
-- series' id for an occurrence, so a user is held out of every occurrence of
-- a recurring campaign alike), and in the control group when
-- bucket('control:<salt>:<user id>') < control_group_pct * 100.
--
-- What the marketer wants to move arrives as conversions (an app's backend
-- posts them, or they are inserted, or `herald ingest-conversions` loads a
-- file); a campaign names its conversion_event and attribution_window, and
-- analyst.lift compares the treated with the held out.
-- applied-if: SELECT to_regclass('public.conversions') IS NOT NULL

ALTER TABLE deliveries DROP CONSTRAINT "delivery status must be a known delivery status";
ALTER TABLE deliveries ADD CONSTRAINT "delivery status must be a known delivery status"
    CHECK (status IN ('queued', 'in_flight', 'sent', 'invalid', 'failed', 'expired', 'skipped', 'cancelled', 'held_out'));

ALTER TABLE settings
    ADD COLUMN control_group_pct numeric(3, 1) NOT NULL DEFAULT 0,
    ADD COLUMN control_group_salt text NOT NULL DEFAULT 'control-1',
    ADD CONSTRAINT "control_group_pct must be from 0 to 20 (percent of users)"
        CHECK (control_group_pct BETWEEN 0 AND 20);

ALTER TABLE campaigns
    ADD COLUMN holdout_pct numeric(3, 1) NOT NULL DEFAULT 0,
    ADD COLUMN conversion_event text,
    ADD COLUMN attribution_window interval NOT NULL DEFAULT '7 days',
    ADD CONSTRAINT "campaign holdout_pct must be from 0 to 50 (percent of users)"
        CHECK (holdout_pct BETWEEN 0 AND 50),
    ADD CONSTRAINT "campaign attribution_window must be from 1 hour to 90 days"
        CHECK (attribution_window BETWEEN interval '1 hour' AND interval '90 days'),
    ADD CONSTRAINT "campaign conversion_event: 1 to 100 characters, no spaces"
        CHECK (conversion_event IS NULL OR conversion_event ~ '^[A-Za-z0-9_.:-]{1,100}$');

-- The documented hash: 0 to 9999.
CREATE FUNCTION herald_bucket10k(t text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (((('x' || left(md5(t), 8))::bit(32)::bigint) * 10000) >> 32)::integer
$$;

-- Why a user is held out of a campaign, or NULL: the global control group
-- first, then the campaign's own holdout.
CREATE FUNCTION herald_held_out(p_campaign bigint, p_user bigint, p_holdout_pct numeric,
                                p_control_pct numeric, p_control_salt text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN p_control_pct > 0 AND herald_bucket10k('control:' || p_control_salt || ':' || p_user) < p_control_pct * 100
            THEN 'global control group'
        WHEN p_holdout_pct > 0 AND herald_bucket10k('holdout:' || p_campaign || ':' || p_user) < p_holdout_pct * 100
            THEN 'held out to measure the campaign''s effect'
    END
$$;

CREATE TABLE conversions (
    id              bigserial PRIMARY KEY,
    user_id         bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    event           text NOT NULL,
    occurred_at     timestamptz NOT NULL,
    amount          numeric(14, 2),
    currency        text,
    idempotency_key text NOT NULL,
    source          text NOT NULL DEFAULT 'sql',
    received_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "conversion event: 1 to 100 characters, no spaces" CHECK (event ~ '^[A-Za-z0-9_.:-]{1,100}$'),
    CONSTRAINT "conversion currency: ISO 4217 such as EUR, with an amount"
        CHECK ((currency IS NULL OR currency ~ '^[A-Z]{3}$') AND (currency IS NULL OR amount IS NOT NULL)),
    CONSTRAINT "conversion idempotency_key: 1 to 200 characters" CHECK (length(idempotency_key) BETWEEN 1 AND 200),
    CONSTRAINT conversions_once UNIQUE (idempotency_key)
);
CREATE INDEX conversions_user_event ON conversions (user_id, event, occurred_at);
GRANT SELECT (id), INSERT (user_id, event, occurred_at, amount, currency, idempotency_key, source) ON conversions TO herald_intake;
GRANT USAGE ON SEQUENCE conversions_id_seq TO herald_intake;

-- Lift, per campaign with a conversion_event and a holdout (its own or the
-- global control group), and per variant (each against the same holdout).
-- The unit is the user, intention to treat: treated is every user assigned to
-- be sent (a row of the campaign not held out, sent or not, arrived or not);
-- held out is every user with a held-out row and none other. Each user's
-- window opens when they were assigned (their first row's created_at) and
-- lasts attribution_window; a conversion of the event in it counts once per
-- user. Two-proportion comparison: absolute lift p1 - p0 with a 95% Wald
-- interval (unpooled standard error), relative lift (p1 - p0) / p0, the
-- pooled z and its two-sided p-value; min_detectable_pts is the lift (in
-- points) a test at 5% with 80% power could detect at these sizes
-- (2.8 × the pooled standard error).
CREATE VIEW analyst.lift AS
WITH assigned AS (
    SELECT d.campaign_id, d.user_id,
           bool_or(d.status <> 'held_out') AS treated,
           min(d.variant) FILTER (WHERE d.status <> 'held_out') AS variant,
           min(d.created_at) AS assigned_at
    FROM deliveries d
    JOIN campaigns c ON c.id = d.campaign_id AND c.conversion_event IS NOT NULL
    WHERE d.kind = 'campaign'
    GROUP BY d.campaign_id, d.user_id
), outcome AS (
    SELECT a.campaign_id, a.treated, a.variant, a.assigned_at + c.attribution_window <= now() AS window_closed,
           EXISTS (SELECT 1 FROM conversions v
                   WHERE v.user_id = a.user_id AND v.event = c.conversion_event
                     AND v.occurred_at >= a.assigned_at AND v.occurred_at < a.assigned_at + c.attribution_window) AS converted,
           (SELECT sum(v.amount) FROM conversions v
            WHERE v.user_id = a.user_id AND v.event = c.conversion_event
              AND v.occurred_at >= a.assigned_at AND v.occurred_at < a.assigned_at + c.attribution_window) AS revenue,
           (SELECT min(v.currency) FROM conversions v
            WHERE v.user_id = a.user_id AND v.event = c.conversion_event AND v.currency IS NOT NULL) AS currency
    FROM assigned a JOIN campaigns c ON c.id = a.campaign_id
), groups AS (
    -- The campaign as a whole (variant NULL) and each of its variants.
    SELECT DISTINCT campaign_id, NULL::text AS variant FROM outcome
    UNION ALL
    SELECT DISTINCT campaign_id, variant FROM outcome WHERE variant IS NOT NULL
), arms AS (
    -- Each against the same held out.
    SELECT g.campaign_id, g.variant,
           count(*) FILTER (WHERE o.treated AND (g.variant IS NULL OR o.variant = g.variant)) AS n1,
           count(*) FILTER (WHERE o.treated AND (g.variant IS NULL OR o.variant = g.variant) AND o.converted) AS x1,
           count(*) FILTER (WHERE NOT o.treated) AS n0,
           count(*) FILTER (WHERE NOT o.treated AND o.converted) AS x0,
           sum(o.revenue) FILTER (WHERE o.treated AND (g.variant IS NULL OR o.variant = g.variant)) AS revenue1,
           sum(o.revenue) FILTER (WHERE NOT o.treated) AS revenue0,
           CASE WHEN count(DISTINCT o.currency) = 1 THEN min(o.currency) END AS currency,
           bool_and(o.window_closed) AS window_closed
    FROM groups g JOIN outcome o ON o.campaign_id = g.campaign_id
    GROUP BY g.campaign_id, g.variant
), rates AS (
    SELECT a.*, x1::float8 / nullif(n1, 0) AS p1, x0::float8 / nullif(n0, 0) AS p0,
           (x1 + x0)::float8 / nullif(n1 + n0, 0) AS pp
    FROM arms a
), stats AS (
    SELECT r.*, p1 - p0 AS diff,
           sqrt(p1 * (1 - p1) / n1 + p0 * (1 - p0) / n0) AS se,
           sqrt(pp * (1 - pp) * (1.0 / n1 + 1.0 / n0)) AS se_pooled
    FROM rates r
    WHERE n1 > 0 AND n0 > 0
)
SELECT s.campaign_id, c.name, s.variant, c.conversion_event, c.attribution_window,
       s.n1 AS treated, s.x1 AS treated_converted, round((100 * s.p1)::numeric, 2) AS treated_rate_pct,
       s.n0 AS held_out, s.x0 AS held_out_converted, round((100 * s.p0)::numeric, 2) AS held_out_rate_pct,
       round((100 * s.diff)::numeric, 2) AS lift_pts,
       round((100 * (s.diff - 1.96 * s.se))::numeric, 2) AS lift_low_pts,
       round((100 * (s.diff + 1.96 * s.se))::numeric, 2) AS lift_high_pts,
       round((100 * s.diff / nullif(s.p0, 0))::numeric, 1) AS relative_lift_pct,
       CASE WHEN s.se_pooled > 0 THEN s.diff / s.se_pooled END AS z,
       CASE WHEN s.se_pooled > 0 THEN herald_two_sided_p(s.diff / s.se_pooled) END AS p_value,
       round((100 * 2.8 * s.se_pooled)::numeric, 2) AS min_detectable_pts,
       round(s.revenue1 / s.n1, 2) AS revenue_per_treated_user,
       round(s.revenue0 / s.n0, 2) AS revenue_per_held_out_user,
       s.currency,
       s.window_closed,
       CASE
           WHEN s.se_pooled IS NULL OR s.se_pooled = 0 THEN
               'no measurable effect yet: no conversions on either side'
           WHEN herald_two_sided_p(s.diff / s.se_pooled) < 0.05 THEN
               format('%s of %s points (95%% CI %s to %s) against the held out, p = %s',
                      CASE WHEN s.diff > 0 THEN 'a lift' ELSE 'a drop' END,
                      round((100 * abs(s.diff))::numeric, 2),
                      round((100 * (s.diff - 1.96 * s.se))::numeric, 2),
                      round((100 * (s.diff + 1.96 * s.se))::numeric, 2),
                      round(herald_two_sided_p(s.diff / s.se_pooled)::numeric, 4))
           ELSE
               format('no measurable effect yet: %s treated and %s held out can show a lift of %s points or more',
                      s.n1, s.n0, round((100 * 2.8 * s.se_pooled)::numeric, 2))
       END || CASE WHEN s.window_closed THEN '' ELSE ' (attribution windows still open)' END AS verdict
FROM stats s JOIN campaigns c ON c.id = s.campaign_id;

GRANT SELECT ON analyst.lift TO herald_analyst;
