-- The analysts' report (herald report, as text or HTML): the analyst views read back for a
-- person, one statement per view for every campaign or only the one given (NULL: every
-- campaign). They read the analyst views only, so that a member of herald_analyst can make
-- the report.
-- Statements of this file are run by Sources/Reporting/AnalystReport.swift.

-- name: campaign-funnel
-- The report's campaigns in id order, each with its funnel (analyst.campaign_funnel): what
-- became of the devices targeted, those still queued or in flight counted together as
-- pending, and how users answered. The other statements' rows hang on these campaigns.
SELECT campaign_id, name, kind, status, failure_reason, send_at, targeted, sent, invalid, failed,
       expired, skipped, cancelled, queued + in_flight, replies, responding_devices,
       response_rate_pct::float8
FROM analyst.campaign_funnel
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign
ORDER BY campaign_id

-- name: action-breakdown
-- The actions each campaign's replies took (analyst.action_breakdown), the most replied
-- first, each under its button's title where it has one, else under the action itself.
SELECT campaign_id, action, coalesce(action_title, action), replies, share_pct::float8
FROM analyst.action_breakdown
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign
ORDER BY campaign_id, replies DESC, action

-- name: replies-over-time
-- Each campaign's replies per UTC minute (analyst.replies_over_time), its actions summed:
-- the report's timeline.
SELECT campaign_id, minute_utc, sum(replies)::bigint FROM analyst.replies_over_time
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign
GROUP BY campaign_id, minute_utc ORDER BY campaign_id, minute_utc

-- name: feedback-text
-- What users typed (analyst.feedback_text), newest first and no more than feedback_limit
-- answers a campaign, each row with how many the campaign has in all, so that the report
-- can say how many it leaves out.
SELECT campaign_id, text, locale, occurred_at, total FROM (
    SELECT campaign_id, text, locale, occurred_at,
           row_number() OVER (PARTITION BY campaign_id ORDER BY occurred_at DESC, text) AS n,
           count(*) OVER (PARTITION BY campaign_id) AS total
    FROM analyst.feedback_text
    WHERE :campaign::bigint IS NULL OR campaign_id = :campaign) f
WHERE n <= :feedback_limit
ORDER BY campaign_id, n

-- name: lift
-- Did it work (analyst.lift): per campaign with a conversion event and a holdout, the
-- campaign as a whole first and then each variant, the treated users' conversion rate
-- against the held-out users', the lift with its interval, its p-value and its verdict.
SELECT campaign_id, variant, conversion_event, treated, treated_rate_pct::float8, held_out,
       held_out_rate_pct::float8, lift_pts::float8, lift_low_pts::float8, lift_high_pts::float8, p_value, verdict
FROM analyst.lift
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign
ORDER BY campaign_id, variant NULLS FIRST

-- name: delivery-confirmation
-- Delivered beside sent (analyst.delivery_confirmation): the deliveries a receipt or a reply
-- confirmed, and the time they took from sent to arrival.
SELECT campaign_id, delivered, arrival_median_s::float8, arrival_p90_s::float8 FROM analyst.delivery_confirmation
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign

-- name: apps
-- Each app's figures (analyst.apps), by its name; the report shows them only when there is
-- more than one app.
SELECT app, display_name, topic, devices, sent, failed, delivered, replied FROM analyst.apps ORDER BY app

-- name: series
-- The schedule of each series among the report's campaigns (analyst.series), for the line
-- that says how it repeats.
SELECT series_id, series_kind, repeat_unit, repeat_every FROM analyst.series
WHERE :campaign::bigint IS NULL OR series_id = :campaign

-- name: occurrences
-- The occurrences of series (analyst.occurrences) in their order: each is listed under its
-- series and marks its own campaign as an occurrence. The campaign given may be the series
-- or one of its occurrences.
SELECT series_id, occurrence, campaign_id, status, send_at, targeted, sent, replies, response_rate_pct::float8
FROM analyst.occurrences
WHERE :campaign::bigint IS NULL OR series_id = :campaign OR campaign_id = :campaign
ORDER BY series_id, occurrence

-- name: pace
-- A paced campaign's pace (analyst.pace): as set, as achieved, and its busiest minute.
SELECT campaign_id, set_per_minute::float8, achieved_per_minute::float8, busiest_minute FROM analyst.pace
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign

-- name: live-activities
-- A Live Activity sale's activities (analyst.live_activities): started by a push and by the
-- app, those on a channel, and its broadcast channels.
SELECT campaign_id, started_by_push, started_by_app, on_channel, channels FROM analyst.live_activities
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign

-- name: live-activity-steps
-- A sale's steps in order (analyst.live_activity_steps), with their pushes and broadcasts:
-- the report shows a step under its sale, not as a campaign of its own.
SELECT campaign_id, step, step_campaign_id, due_at, status, targeted, sent, expired, skipped, confirmed,
       broadcasts_sent, broadcasts_not_sent
FROM analyst.live_activity_steps
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign
ORDER BY campaign_id, step

-- name: variant-comparison
-- A campaign's A/B variants side by side (analyst.variant_comparison), in their order, the
-- baseline first: each one's figures and its response rate against the baseline's.
SELECT campaign_id, variant, position, variants, share_pct, targeted, targeted_pct::float8, sent, replies,
       responding_devices, opened, dismissed, typed_answers, response_rate_pct::float8, baseline, z, p_value
FROM analyst.variant_comparison
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign
ORDER BY campaign_id, position

-- name: variant-actions
-- The actions each variant's replies took (analyst.variant_actions), the most replied first.
SELECT campaign_id, variant, action, coalesce(action_title, action), replies, share_pct::float8
FROM analyst.variant_actions
WHERE :campaign::bigint IS NULL OR campaign_id = :campaign
ORDER BY campaign_id, variant, replies DESC, action

-- name: journey-goals
-- Each journey's entrants and goal (analyst.journey_goal): the report's line for it.
SELECT journey_id, journey, goal_event, entered, reached_goal, held_out, held_out_converted
FROM analyst.journey_goal ORDER BY journey_id

-- name: journey-steps
-- Where each journey's members are and where they left (analyst.journey_steps).
SELECT journey_id, version, step, active, waiting_for_an_event, done_here, goal_here, exited_here
FROM analyst.journey_steps ORDER BY journey_id, version, step

-- name: journey-flow
-- How many members took each edge of each journey (analyst.journey_flow): the flow the
-- report draws, its counts on its edges; to_step '' is out of the journey, position -1 the
-- journey-wide goal or exit.
SELECT journey_id, version, from_step, coalesce(position, -1), kind, coalesce(to_step, ''), members
FROM analyst.journey_flow ORDER BY journey_id, version, from_step, position NULLS LAST, kind
