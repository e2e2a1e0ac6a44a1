-- Closing a journey (docs/DESIGN.md, contract 11, "How a run moves members"): its active
-- members leave at once (exited, with a transition of kind exited from the step they were
-- at), what its messages still had queued is cancelled, and its messages complete. A run
-- moving some of its members holds their rows: the close waits for that batch's commit,
-- then exits whoever is still active.
--
-- applied-if: SELECT to_regprocedure('public.herald_journey_closed()') IS NOT NULL

CREATE FUNCTION herald_journey_closed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    NEW.closed_at := coalesce(NEW.closed_at, now());
    WITH gone AS (
        UPDATE journey_members m
        SET state = 'exited', due_at = NULL, waiting = false, moves = m.moves + 1, left_at = now()
        WHERE m.journey_id = NEW.id AND m.state = 'active'
        RETURNING m.id, m.moves, m.step
    )
    INSERT INTO journey_transitions (member_id, seq, journey_id, from_step, position, kind, to_step)
    SELECT g.id, g.moves, NEW.id, g.step, NULL, 'exited', NULL FROM gone g;
    UPDATE deliveries d SET status = 'cancelled', last_error = 'journey closed', updated_at = now()
    FROM campaigns c
    WHERE c.journey_id = NEW.id AND d.campaign_id = c.id AND d.status = 'queued';
    UPDATE campaigns SET status = 'completed', completed_at = coalesce(completed_at, now())
    WHERE journey_id = NEW.id AND status IN ('scheduled', 'running', 'paused');
    RETURN NEW;
END $$;
COMMENT ON FUNCTION herald_journey_closed() IS 'Closes a journey (contract 11): sets closed_at, exits its active members (state exited, a transition of kind exited from their step), cancels its messages'' queued deliveries and completes its messages. As the owner: a marketer closes a journey without rights on members, the ledger or a campaign''s status. Fired by journeys_closed.';
REVOKE ALL ON FUNCTION herald_journey_closed() FROM PUBLIC;

CREATE TRIGGER journeys_closed BEFORE UPDATE OF status ON journeys
    FOR EACH ROW WHEN (NEW.status = 'closed' AND OLD.status IS DISTINCT FROM 'closed')
    EXECUTE FUNCTION herald_journey_closed();
COMMENT ON TRIGGER journeys_closed ON journeys IS 'Closing a journey exits its members and completes its messages (herald_journey_closed).';

-- A closed journey stays closed: its members left, its messages completed.
CREATE FUNCTION herald_journey_stays_closed() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'journey % is closed: a closed journey takes no other status (write a new journey)', OLD.id
        USING ERRCODE = 'check_violation';
END $$;
COMMENT ON FUNCTION herald_journey_stays_closed() IS 'Refuses to reopen a closed journey: its members left and its messages completed when it closed. Fired by journeys_stay_closed.';
REVOKE ALL ON FUNCTION herald_journey_stays_closed() FROM PUBLIC;

CREATE TRIGGER journeys_stay_closed BEFORE UPDATE OF status ON journeys
    FOR EACH ROW WHEN (OLD.status = 'closed' AND NEW.status IS DISTINCT FROM 'closed')
    EXECUTE FUNCTION herald_journey_stays_closed();
COMMENT ON TRIGGER journeys_stay_closed ON journeys IS 'A closed journey stays closed (herald_journey_stays_closed).';
