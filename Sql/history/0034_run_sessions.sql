-- Herald schema: a run is alive while its own database session is
-- (docs/DESIGN.md, "Leases"; docs/operators.md, "Reliability").
--
-- A run used to be declared gone when its host name matched this one's and
-- its process id did not exist here: wrong for processes in separate PID
-- namespaces on one host name (containers on a host network), which then
-- declared each other gone while both were sending. Now each run holds a
-- session-level advisory lock on a connection of its own for its whole life
-- (herald_hold_run, every few seconds) and records which server incarnation
-- it holds it on. A run is gone when nobody holds its lock and either
--   * it held it on this very server incarnation (its session ended while
--     the server stayed up: the process died or was cut off), or
--   * it has not confirmed it for herald_run_gone's grace (the server
--     restarted or failed over, and the run did not come back in time).
-- A run that never held its lock (a binary older than this file) is never
-- gone by this rule; its lease still lapses.
-- applied-if: SELECT to_regprocedure('public.herald_run_gone(bigint,interval)') IS NOT NULL

ALTER TABLE runs
    ADD COLUMN session_server timestamptz,
    ADD COLUMN session_at     timestamptz;

-- The advisory lock of a run: two int4 keys, the first Herald's own.
CREATE FUNCTION herald_run_lock_key(p_run bigint) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT (p_run % 2147483647)::integer $$;

-- Takes (or confirms) the run's lock on the calling session, and records
-- where and when; false when another session holds it.
CREATE FUNCTION herald_hold_run(p_run bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_held boolean;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_locks
               WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
                 AND classid = 1213352004 AND objid = herald_run_lock_key(p_run) AND objsubid = 2) THEN
        v_held := true;
    ELSE
        v_held := pg_try_advisory_lock(1213352004, herald_run_lock_key(p_run));
    END IF;
    IF v_held THEN
        UPDATE runs SET session_server = pg_postmaster_start_time(), session_at = now()
        WHERE id = p_run AND status = 'running';
    END IF;
    RETURN v_held;
END $$;

-- Whether the run is gone (the rule above); p_grace is how long a run has
-- to take its lock again after a restart or failover.
CREATE FUNCTION herald_run_gone(p_run bigint, p_grace interval DEFAULT '15 seconds') RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT r.session_server IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM pg_locks l
                       WHERE l.locktype = 'advisory' AND l.granted
                         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                         AND l.classid = 1213352004 AND l.objid = herald_run_lock_key(r.id) AND l.objsubid = 2)
       AND (r.session_server = pg_postmaster_start_time() OR r.session_at < now() - p_grace)
    FROM runs r WHERE r.id = p_run
$$;

-- Gives the run's lock back on the calling session (its connection goes
-- back to a pool).
CREATE FUNCTION herald_release_run(p_run bigint) RETURNS boolean
LANGUAGE sql AS $$ SELECT pg_advisory_unlock(1213352004, herald_run_lock_key(p_run)) $$;

GRANT UPDATE (session_server, session_at) ON runs TO herald_job;
