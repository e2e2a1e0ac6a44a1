-- Herald schema: what the analysts' HTML report (`herald report --html`)
-- reads besides the views of 0002. Like those, readable by herald_analyst.
-- (`herald migrate` adopts it when applied by hand with psql, by this test:)
-- applied-if: SELECT to_regclass('analyst.replies_over_time') IS NOT NULL

-- Replies per campaign, minute (UTC, by when the user answered) and action.
CREATE VIEW analyst.replies_over_time AS
SELECT r.campaign_id,
       date_trunc('minute', r.occurred_at AT TIME ZONE 'UTC') AS minute_utc,
       r.action,
       count(*) AS replies
FROM replies r
GROUP BY r.campaign_id, date_trunc('minute', r.occurred_at AT TIME ZONE 'UTC'), r.action;

GRANT SELECT ON analyst.replies_over_time TO herald_analyst;
