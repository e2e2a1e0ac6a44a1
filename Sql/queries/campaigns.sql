-- Campaigns' lifecycle: which are due, loading one to send, and moving its status
-- (scheduled, running, completed; or failed with a reason).
-- Statements of this file are run by Sources/Store/CampaignStore.swift.

-- name: expire
-- Ends the campaigns whose time is up (expires_at; a recurring series' expiry is each
-- occurrence's window instead): their queued rows and channel pushes become expired, and
-- their batch rows no live run holds too (herald_close_batch; a held span's remainder is
-- its run's to close). Answers how many rows expired.
WITH ended AS (
    UPDATE campaigns SET status = 'completed', completed_at = now()
    WHERE status IN ('scheduled', 'running', 'paused') AND expires_at <= now()
      AND repeat_unit IS NULL
    RETURNING id
), exp AS (
    UPDATE deliveries SET status = 'expired', last_error = 'campaign expired before delivery', updated_at = now()
    WHERE campaign_id IN (SELECT id FROM ended) AND status = 'queued'
    RETURNING id
), channels AS (
    UPDATE channel_pushes SET status = 'expired', last_error = 'campaign expired before delivery', updated_at = now()
    WHERE campaign_id IN (SELECT id FROM ended) AND status = 'queued'
), batch AS (
    SELECT herald_close_batch(id, 'expired', 'campaign expired before delivery') AS n FROM ended
)
SELECT (SELECT count(*) FROM exp) + (SELECT coalesce(sum(n), 0) FROM batch)::bigint

-- name: due
-- The campaigns a run sends now, by send_at then id: scheduled or running, due, not
-- expired, approved where approval is required (herald_approved). A recurring series and
-- an on-entry campaign are not sent themselves: their occurrences are. A journey's message
-- (journey_id) is sent while its journey runs: its rows are written by its members' moves.
SELECT id, kind, interruption_level, send_at FROM campaigns c
WHERE status IN ('scheduled', 'running') AND send_at <= now()
  AND (expires_at IS NULL OR expires_at > now())
  AND repeat_unit IS NULL AND NOT on_segment_entry
  AND (journey_id IS NULL OR EXISTS (SELECT 1 FROM journeys j WHERE j.id = c.journey_id AND j.status = 'running'))
  AND herald_approved(id)
ORDER BY send_at, id

-- name: load
-- One campaign with everything a run needs to send it: its content, options, segment and
-- rule, its series' on-entry and best-hour settings (an occurrence takes its series'), and
-- what makes it a sale's start or step, a widget push or a journey's message.
SELECT c.id, c.name, c.kind, c.status, c.content::text, c.default_locale, c.media_url, c.media_type,
       c.category_id, c.custom::text, c.sensitive::text, c.send_at, c.expires_at, c.priority,
       c.collapse_id, c.thread_id, c.interruption_level, c.relevance_score, c.sound,
       c.quiet_hours, c.frequency_capped, s.name, coalesce(s.rule, '{}'::jsonb)::text,
       c.rate_per_minute, extract(epoch FROM c.finish_within)::float8,
       c.series_id, c.occurrence,
       CASE WHEN p.on_segment_entry THEN p.id WHEN c.on_segment_entry THEN c.id END,
       extract(epoch FROM coalesce(p.resend_after, c.resend_after))::float8,
       c.code_pool, coalesce(p.best_hour, c.best_hour),
       c.live_activity::text, c.sale_id, c.sale_step, c.widgets_push, c.widgets_of, c.journey_id
FROM campaigns c LEFT JOIN segments s ON s.id = c.segment_id
LEFT JOIN campaigns p ON p.id = c.series_id
WHERE c.id = :campaign

-- name: complete-if-done
-- Marks a running campaign completed when nothing of it is left to send (no row or channel
-- push queued or in flight, every batch span settled: herald_batch_done) and it takes no
-- more entrants (an on-entry occurrence, until open_until; a journey's message, ever: it
-- ends with its journey).
UPDATE campaigns SET status = 'completed', completed_at = now()
WHERE id = :campaign AND status = 'running' AND snapshot_through IS NULL AND journey_id IS NULL
  AND (open_until IS NULL OR open_until <= now())
  AND NOT EXISTS (SELECT 1 FROM deliveries
                  WHERE campaign_id = :campaign AND status IN ('queued', 'in_flight'))
  AND NOT EXISTS (SELECT 1 FROM channel_pushes
                  WHERE campaign_id = :campaign AND status IN ('queued', 'in_flight'))
  AND herald_batch_done(:campaign)
RETURNING id
