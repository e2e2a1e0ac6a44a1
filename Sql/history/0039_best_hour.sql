-- Herald schema: each user's best hour (docs/marketers.md, "Each user's
-- best hour"; DESIGN, "Best hour").
--
--   * campaigns.best_hour (and campaign_variants.best_hour, NULL: as the
--     campaign) asks to reach each user at the hour they usually engage,
--     on the first day that hour comes after the campaign is due;
--   * a user's best hour is the hour of the day, in their own time zone,
--     at which most of their replies (taps, buttons, typed answers) and
--     conversions happened over the last settings.best_hour_days days; a
--     user with fewer than settings.best_hour_min_events of them, or whose
--     best hour would come after the campaign expires, gets the campaign's
--     own time (or local time). Nobody is dropped for lack of history;
--   * receipts are not counted: a notification arrives when Herald sent
--     it, so its arrival says when the campaign went out, not when the
--     user engages;
--   * quiet hours still hold: a best hour inside them waits for their end;
--   * two variants that differ only in best_hour compare it with a fixed
--     time (analyst.variant_comparison); analyst.best_hours shows each
--     user's hour and the events it rests on.
-- applied-if: SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'campaigns' AND column_name = 'best_hour')

ALTER TABLE settings
    ADD COLUMN best_hour_days integer NOT NULL DEFAULT 60
        CONSTRAINT "best_hour_days must be from 7 to 365" CHECK (best_hour_days BETWEEN 7 AND 365),
    ADD COLUMN best_hour_min_events integer NOT NULL DEFAULT 3
        CONSTRAINT "best_hour_min_events must be from 1 to 100" CHECK (best_hour_min_events BETWEEN 1 AND 100);

ALTER TABLE campaigns ADD COLUMN best_hour boolean NOT NULL DEFAULT false;
INSERT INTO campaign_approval_columns (column_name, written_by, withdraws, why) VALUES
    ('best_hour', 'marketer', 'schedule', 'when it goes out');
GRANT INSERT (best_hour), UPDATE (best_hour) ON campaigns TO herald_marketer;
ALTER TABLE campaign_variants ADD COLUMN best_hour boolean;

-- Each user's best hour (0-23, their own clock) and how many events it
-- rests on; only users with enough events.
-- SECURITY DEFINER: analysts read the hours, not the replies they come from.
CREATE FUNCTION herald_best_hours() RETURNS TABLE (user_id bigint, hour integer, events bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH st AS (SELECT best_hour_days, best_hour_min_events FROM settings),
    ev AS (
        SELECT r.user_id, r.occurred_at AS at FROM replies r, st
        WHERE r.occurred_at > now() - make_interval(days => st.best_hour_days)
        UNION ALL
        SELECT c.user_id, c.occurred_at FROM conversions c, st
        WHERE c.occurred_at > now() - make_interval(days => st.best_hour_days)
    )
    -- The most frequent hour; a tie goes to the earlier hour.
    SELECT ev.user_id, mode() WITHIN GROUP (ORDER BY extract(hour FROM ev.at AT TIME ZONE u.time_zone)::integer),
           count(*)
    FROM ev JOIN users u ON u.id = ev.user_id
    GROUP BY ev.user_id
    HAVING count(*) >= (SELECT best_hour_min_events FROM st)
$$;

-- The first moment at or after `after` when `zone`'s clock shows hour:minute.
CREATE FUNCTION herald_next_local(zone text, after timestamptz, hour integer, minute integer) RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN t >= after THEN t
                ELSE (((after AT TIME ZONE zone)::date + 1) + make_time(hour, minute, 0)) AT TIME ZONE zone END
    FROM (SELECT (((after AT TIME ZONE zone)::date) + make_time(hour, minute, 0)) AT TIME ZONE zone AS t) x
$$;

CREATE VIEW analyst.best_hours AS
SELECT u.external_id AS user_external_id, u.time_zone, b.hour AS best_hour, b.events
FROM herald_best_hours() b JOIN users u ON u.id = b.user_id;
REVOKE ALL ON FUNCTION herald_best_hours() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_best_hours() TO herald_job, herald_analyst, herald_marketer;
GRANT SELECT ON analyst.best_hours TO herald_analyst;
