-- A journey's wait until the user's best hour (docs/DESIGN.md, contract 11): one user's best
-- hour, by the rule of herald_best_hours() (the most frequent hour of their replies and
-- conversions on their own clock over settings.best_hour_days, with at least
-- settings.best_hour_min_events of them; a tie to the earlier hour), read through the
-- users' indexes for the members a run claims, instead of every user's at each batch.
-- BestHourTests holds the two to the same answers.
--
-- applied-if: SELECT to_regprocedure('public.herald_best_hour(bigint)') IS NOT NULL

CREATE FUNCTION herald_best_hour(p_user bigint) RETURNS integer
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    WITH st AS (SELECT best_hour_days, best_hour_min_events FROM settings),
    ev AS (
        SELECT r.occurred_at AS at FROM replies r, st
        WHERE r.user_id = p_user AND r.occurred_at > now() - make_interval(days => st.best_hour_days)
        UNION ALL
        SELECT c.occurred_at FROM conversions c, st
        WHERE c.user_id = p_user AND c.occurred_at > now() - make_interval(days => st.best_hour_days)
    )
    SELECT mode() WITHIN GROUP (ORDER BY extract(hour FROM ev.at AT TIME ZONE u.time_zone)::integer)
    FROM ev, users u
    WHERE u.id = p_user
    HAVING count(*) >= (SELECT best_hour_min_events FROM st)
$$;
COMMENT ON FUNCTION herald_best_hour(p_user bigint) IS 'One user''s best hour (0-23 on their clock), by the rule of herald_best_hours(), or NULL when they have too little history: what a journey''s wait until the best hour reads for the members a run claims. As the owner, so that a run learns the hour and not the replies.';
REVOKE ALL ON FUNCTION herald_best_hour(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION herald_best_hour(bigint) TO herald_job;
