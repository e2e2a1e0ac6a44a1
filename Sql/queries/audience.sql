-- The audience snapshot: who a campaign reaches, written once as its ledger rows.
-- Statements of this file are run by Sources/Store/AudienceStore.swift.

-- name: snapshot
-- Writes a campaign's delivery rows for the devices in (:after, :through] that its
-- audience holds, each with its status (queued, batch, skipped, held_out), when it
-- may go (not_before) and its variant, and answers the counts a run reports.
-- Filled in by code: the fragment capped (the users at their frequency cap: read back
-- from snapshot_caps for a run's slices, or found here), users (a slice looks its
-- devices' users up by id; the whole audience at once is a join), conflict (rows
-- already written are skipped, when there are any) and segment (the segment's rule,
-- compiled for this statement; it names devices dv and users u).
WITH capped AS (
    {{capped}}
), had AS (
    -- Sent on segment entry: the users the series has had (a row not skipped)
    -- before this look at the segment, within resend_after when it is set.
    SELECT DISTINCT x.user_id FROM deliveries x
    WHERE :on_entry AND x.kind = 'campaign' AND x.status <> 'skipped'
      AND x.campaign_id = ANY (ARRAY(SELECT o.id FROM campaigns o WHERE o.series_id = :entry_series))
      AND x.created_at < (SELECT coalesce(snapshot_at, now()) FROM campaigns WHERE id = :campaign)
      AND (:resend_after::float8 IS NULL OR x.created_at > now() - make_interval(secs => :resend_after::float8))
), best AS (
    SELECT b.user_id, b.hour FROM herald_best_hours() b WHERE :best_hours
), ins AS (
    INSERT INTO deliveries (campaign_id, device_id, user_id, status, not_before, last_error, variant)
    SELECT :campaign, dv.id, u.id,
           CASE WHEN ho.why IS NOT NULL THEN 'held_out'
                WHEN :sensitive AND dv.public_key IS NULL THEN 'skipped'
                WHEN cp.user_id IS NOT NULL THEN 'skipped'
                WHEN lm.missed AND lc.local_missed = 'skip' THEN 'skipped'
                WHEN :spans AND nb.due <= now() THEN 'batch'
                ELSE 'queued' END,
           nb.due,
           CASE WHEN ho.why IS NOT NULL THEN ho.why
                WHEN :sensitive AND dv.public_key IS NULL THEN :no_key::text
                WHEN cp.user_id IS NOT NULL THEN 'frequency cap reached'
                WHEN lm.missed AND lc.local_missed = 'skip'
                THEN 'its local send time had passed when the campaign was written' END,
           (:variants::text[])[vb.i]
    FROM devices dv
    {{users}}
    CROSS JOIN settings st
    -- A campaign at a local time (send_at_local, herald_campaign_local_send_at): each
    -- device is due when its user's zone reaches it, at once when that had passed when
    -- the campaign was written (or skipped).
    CROSS JOIN (SELECT send_at_local, local_missed, created_at, holdout_pct, coalesce(series_id, id) AS hash_id, apps,
                       audience, expires_at
                FROM campaigns WHERE id = :campaign) lc
    CROSS JOIN LATERAL (
        SELECT greatest(now(), coalesce(lc.send_at_local AT TIME ZONE u.time_zone, now())) AS due,
               coalesce((lc.send_at_local AT TIME ZONE u.time_zone) < lc.created_at, false) AS missed
    ) lm
    -- Held out (herald_held_out): the global control group, or the campaign's holdout.
    CROSS JOIN LATERAL (
        SELECT CASE WHEN lc.holdout_pct > 0 OR st.control_group_pct > 0
                    THEN herald_held_out(lc.hash_id, u.id, lc.holdout_pct, st.control_group_pct, st.control_group_salt)
               END AS why
    ) ho
    -- The device's variant (none when held out, or without variants).
    CROSS JOIN LATERAL (
        SELECT CASE WHEN cardinality(:variants::text[]) > 0 AND ho.why IS NULL
                    THEN width_bucket(herald_variant_bucket(:campaign, dv.id), :variant_bounds::int4[]) END AS i
    ) vb
    -- At the user's best hour (herald_best_hours) when the campaign or the device's
    -- variant asks for it, the user has one, and it comes before the campaign expires;
    -- spread over the hour's minutes.
    LEFT JOIN best ON best.user_id = dv.user_id
    CROSS JOIN LATERAL (
        SELECT CASE WHEN best.hour IS NOT NULL AND coalesce((:variant_best_hours::bool[])[vb.i], :best_hour)
                         AND (lc.expires_at IS NULL
                              OR herald_next_local(u.time_zone, lm.due, best.hour, (dv.id % 60)::int) < lc.expires_at)
                    THEN herald_next_local(u.time_zone, lm.due, best.hour, (dv.id % 60)::int)
                    ELSE lm.due END AS due
    ) bh
    -- When it may go: its quiet hours (herald_quiet_until) pushed past.
    CROSS JOIN LATERAL (
        SELECT CASE WHEN :quiet_hours THEN herald_quiet_until(u.time_zone, bh.due, st.quiet_hours_start, st.quiet_hours_end)
                    ELSE bh.due END AS due
    ) nb
    -- On the device's user_id (the same user): the planner knows its statistics, not
    -- those of the looked-up users' ids, and would otherwise misjudge a slice's size.
    LEFT JOIN capped cp ON cp.user_id = dv.user_id
    LEFT JOIN had ON had.user_id = dv.user_id
    WHERE dv.invalidated_at IS NULL AND u.opted_out_at IS NULL
      AND dv.id > :after AND dv.id <= :through
      -- The apps it goes to (campaigns.apps); NULL: every app's devices.
      AND (lc.apps IS NULL OR dv.app = ANY (lc.apps))
      -- A campaign to its recipients (campaign_recipients): only the users listed.
      AND (lc.audience = 'segment' OR EXISTS (
          SELECT 1 FROM campaign_recipients rc WHERE rc.campaign_id = :campaign AND rc.external_id = u.external_id))
      -- On entry, a capped user is left for a later run rather than skipped.
      AND had.user_id IS NULL AND NOT (:on_entry AND cp.user_id IS NOT NULL)
      AND ({{segment}})
    {{conflict}}
    RETURNING id, status, not_before, last_error = 'frequency cap reached' AS capped,
              last_error = :no_key::text AS no_key, variant
), by_variant AS (
    SELECT variant, count(*) AS devices, count(*) FILTER (WHERE status IN ('queued', 'batch')) AS queued
    FROM ins WHERE variant IS NOT NULL GROUP BY variant
), ids AS (
    -- For the reply intake's lookup by delivery id (delivery_id_ranges).
    INSERT INTO delivery_id_ranges (campaign_id, ids)
    SELECT :campaign, int8range(min(id), max(id), '[]') FROM ins HAVING count(*) > 0
)
SELECT count(*)::bigint,
       count(*) FILTER (WHERE status IN ('queued', 'batch'))::bigint,
       count(*) FILTER (WHERE status = 'skipped')::bigint,
       count(*) FILTER (WHERE status = 'queued' AND not_before > now())::bigint,
       count(*) FILTER (WHERE status = 'skipped' AND no_key)::bigint,
       count(*) FILTER (WHERE status = 'skipped' AND capped)::bigint,
       count(*) FILTER (WHERE status = 'held_out')::bigint,
       coalesce((SELECT array_agg(variant ORDER BY variant COLLATE "C") FROM by_variant), '{}')::text[],
       coalesce((SELECT array_agg(devices ORDER BY variant COLLATE "C") FROM by_variant), '{}')::int8[],
       coalesce((SELECT array_agg(queued ORDER BY variant COLLATE "C") FROM by_variant), '{}')::int8[]
FROM ins;

-- name: capped-users
-- The users who got settings.frequency_cap campaigns within settings.frequency_window,
-- when the cap applies: the cap's one statement, for a whole audience at once and for the
-- set a run's slices share (snapshot_caps). Only the campaigns that may have sent within
-- the window (not those that ended before it) are read: the ledger partitions to read.
-- Filled in by code: the fragment enabled (whether the cap applies, an SQL boolean).
SELECT d.user_id FROM delivery_status d, settings st
WHERE {{enabled}} AND d.kind = 'campaign' AND d.status = 'sent' AND d.sent_at > now() - st.frequency_window
  AND d.campaign_id = ANY (ARRAY(SELECT rc.id FROM campaigns rc, settings rs
                                 WHERE coalesce(rc.completed_at, now()) > now() - rs.frequency_window))
GROUP BY d.user_id HAVING count(DISTINCT d.campaign_id) >= min(st.frequency_cap)

-- name: store-caps
-- Keeps the campaign's frequency-capped users for the slices of its snapshot
-- (snapshot_caps) unless kept already (by an earlier slice, or one before a crash): the
-- first slice finds them, the next ones read them back instead of each aggregating the
-- window's whole ledger again.
-- Filled in by code: the fragment capped (the statement capped-users, the cap applying).
INSERT INTO snapshot_caps (campaign_id, users)
SELECT :campaign, coalesce(array_agg(capped.user_id), '{}')
FROM ({{capped}}) capped
WHERE NOT EXISTS (SELECT 1 FROM snapshot_caps WHERE campaign_id = :campaign)
ON CONFLICT (campaign_id) DO NOTHING
