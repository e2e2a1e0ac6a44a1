-- A journey under approval (docs/DESIGN.md, contract 11): its messages are campaigns,
-- each approved as campaigns are (herald_approve, herald_approved: the one rule), and a
-- change to the journey's own rows (who enters, its goal, its steps, its edges) withdraws
-- the approval of each of its messages, with the change as the reason: a reviewer approved
-- the messages within the journey they saw.
--
-- applied-if: SELECT to_regprocedure('public.herald_journey_changed()') IS NOT NULL

CREATE FUNCTION herald_journey_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_journey bigint;
    v_what text;
    v_message bigint;
BEGIN
    -- (Each table's fields in a branch of its own: plpgsql resolves a field when it runs it.)
    IF TG_TABLE_NAME = 'journeys' THEN
        v_journey := NEW.id;
        v_what := 'its entry, goal, first step or version';
    ELSIF TG_TABLE_NAME = 'journey_steps' AND TG_OP = 'DELETE' THEN
        v_journey := OLD.journey_id;
        v_what := 'step ' || OLD.step;
    ELSIF TG_TABLE_NAME = 'journey_steps' THEN
        v_journey := NEW.journey_id;
        v_what := 'step ' || NEW.step;
    ELSIF TG_OP = 'DELETE' THEN
        v_journey := OLD.journey_id;
        v_what := 'an edge of step ' || OLD.from_step;
    ELSE
        v_journey := NEW.journey_id;
        v_what := 'an edge of step ' || NEW.from_step;
    END IF;
    FOR v_message IN SELECT id FROM campaigns WHERE journey_id = v_journey AND approved_at IS NOT NULL LOOP
        PERFORM herald_clear_approval(v_message, 'changed: journey ' || v_journey || ', ' || v_what);
    END LOOP;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION herald_journey_changed() IS 'Withdraws the approval of each message of a journey whose rows changed (who enters, its goal, its steps, its edges), naming the change (herald_clear_approval): its messages were approved within the journey their reviewer saw. Fired by journeys_changed, journey_steps_changed and journey_edges_changed.';
REVOKE ALL ON FUNCTION herald_journey_changed() FROM PUBLIC;

CREATE TRIGGER journeys_changed AFTER UPDATE OF apps, version, first_step, entry, entry_segment_id, entry_event,
    entry_campaign_id, entry_action, reentry, reentry_after, goal_event, holdout_pct ON journeys
    FOR EACH ROW WHEN (OLD IS DISTINCT FROM NEW) EXECUTE FUNCTION herald_journey_changed();
CREATE TRIGGER journey_steps_changed AFTER INSERT OR UPDATE OR DELETE ON journey_steps
    FOR EACH ROW EXECUTE FUNCTION herald_journey_changed();
CREATE TRIGGER journey_edges_changed AFTER INSERT OR UPDATE OR DELETE ON journey_edges
    FOR EACH ROW EXECUTE FUNCTION herald_journey_changed();
COMMENT ON TRIGGER journeys_changed ON journeys IS 'A change to who enters a journey, its goal, first step or version withdraws its messages'' approval (herald_journey_changed).';
COMMENT ON TRIGGER journey_steps_changed ON journey_steps IS 'A change to a journey''s steps withdraws its messages'' approval (herald_journey_changed).';
COMMENT ON TRIGGER journey_edges_changed ON journey_edges IS 'A change to a journey''s edges withdraws its messages'' approval (herald_journey_changed).';
