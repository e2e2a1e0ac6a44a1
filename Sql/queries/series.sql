-- Recurring and on-entry campaigns (herald_occurrence): the series as the code steps them.
-- Statements of this file are run by Sources/Store/SeriesStore.swift.

-- name: load
-- Reads series (campaigns with repeat_unit or on_segment_entry) for Series.step: each
-- one's schedule, its local start as the UTC wall-clock time it names, its expiry and
-- resume time, its last occurrence made (the highest campaigns.occurrence of its
-- series_id), and the database's clock, the now every step is taken at.
-- Filled in by code: the fragment which_series (the active ones, or one by its id).
SELECT s.id, s.repeat_unit, s.repeat_every, s.repeat_on, s.repeat_day, s.repeat_count,
       s.repeat_until, s.on_segment_entry, extract(epoch FROM s.resend_after)::float8,
       s.send_at, s.send_at_local AT TIME ZONE 'UTC', s.expires_at, s.resumed_at,
       coalesce((SELECT max(o.occurrence) FROM campaigns o WHERE o.series_id = s.id), 0), now()
FROM campaigns s
WHERE {{which_series}}
ORDER BY s.id

-- name: complete
-- Ends a series with no moment left (campaigns.status completed); its occurrences go on
-- as campaigns of their own. No row when it had already ended.
UPDATE campaigns SET status = 'completed', completed_at = now()
WHERE id = :series AND status IN ('scheduled', 'running') RETURNING id
