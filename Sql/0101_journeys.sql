-- Journeys (docs/DESIGN.md, contract 11): campaigns that wait, listen and branch on what
-- each user answered, typed, received or bought. A marketer writes a journey as rows
-- (journeys, journey_steps, journey_edges); a run moves each member (journey_members) along
-- its edges, one recorded move at a time (journey_transitions).
--
-- applied-if: SELECT to_regclass('public.journeys') IS NOT NULL

-- A send step's message is a campaign of the journey: never due by itself.
ALTER TABLE campaigns ADD COLUMN journey_id bigint;
COMMENT ON COLUMN campaigns.journey_id IS 'The journey whose send step this campaign is the message of: its rows are written by the journey, and it is never due by itself (NULL: an ordinary campaign).';
INSERT INTO campaign_approval_columns (column_name, written_by, withdraws, why)
VALUES ('journey_id', 'marketer', 'segment', 'makes the campaign a journey''s message, sent to the journey''s members instead of its segment');

CREATE TABLE journeys (
    id bigserial PRIMARY KEY,
    name text NOT NULL UNIQUE CONSTRAINT "journey name: 1 to 200 characters" CHECK (char_length(name) BETWEEN 1 AND 200),
    apps text[],
    status text NOT NULL DEFAULT 'draft'
        CONSTRAINT "journey status: draft, scheduled, running, paused or closed"
        CHECK (status IN ('draft', 'scheduled', 'running', 'paused', 'closed')),
    version integer NOT NULL DEFAULT 1 CONSTRAINT "journey version: 1 or more" CHECK (version >= 1),
    first_step text NOT NULL,
    entry text NOT NULL
        CONSTRAINT "journey entry: segment, conversion, reply, recipients, campaign"
        CHECK (entry IN ('segment', 'conversion', 'reply', 'recipients', 'campaign')),
    entry_segment_id bigint REFERENCES segments (id),
    entry_event text,
    entry_campaign_id bigint REFERENCES campaigns (id),
    entry_action text,
    reentry text NOT NULL DEFAULT 'never'
        CONSTRAINT "journey reentry: never, after (with reentry_after) or always"
        CHECK (reentry IN ('never', 'after', 'always')),
    reentry_after interval,
    goal_event text CONSTRAINT "journey goal_event: a conversion event (as conversions.event)"
        CHECK (goal_event ~ '^[A-Za-z0-9_.:-]{1,100}$'),
    holdout_pct integer NOT NULL DEFAULT 0 CONSTRAINT "journey holdout_pct: 0 to 100" CHECK (holdout_pct BETWEEN 0 AND 100),
    starts_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL DEFAULT session_user,
    created_at timestamptz NOT NULL DEFAULT now(),
    closed_at timestamptz,
    CONSTRAINT "journey entry segment: entry_segment_id, and only it"
        CHECK ((entry = 'segment') = (entry_segment_id IS NOT NULL)),
    CONSTRAINT "journey entry conversion: entry_event, and only it"
        CHECK ((entry = 'conversion') = (entry_event IS NOT NULL)),
    CONSTRAINT "journey entry reply or campaign: entry_campaign_id, only them"
        CHECK ((entry IN ('reply', 'campaign')) = (entry_campaign_id IS NOT NULL)),
    CONSTRAINT "journey entry_action: only with entry reply"
        CHECK (entry_action IS NULL OR entry = 'reply'),
    CONSTRAINT "journey reentry after: reentry_after, and only it"
        CHECK ((reentry = 'after') = (reentry_after IS NOT NULL))
);
COMMENT ON TABLE journeys IS 'A journey as a marketer writes it (contract 11): who enters it (entry and its columns), when they may enter again (reentry), the goal that takes a member out from anywhere (goal_event), the share held out at the entry (holdout_pct) and the steps new members take (version, first_step). Checked by herald_journey_problems when it is scheduled or run (journeys_checked).';

CREATE TABLE journey_steps (
    journey_id bigint NOT NULL REFERENCES journeys (id) ON DELETE CASCADE,
    version integer NOT NULL,
    step text NOT NULL CONSTRAINT "journey step: 1 to 40 of a-z, 0-9, _ and -" CHECK (step ~ '^[a-z0-9_-]{1,40}$'),
    kind text NOT NULL
        CONSTRAINT "journey step kind: send, wait, wait_for, branch, split or exit"
        CHECK (kind IN ('send', 'wait', 'wait_for', 'branch', 'split', 'exit')),
    campaign_id bigint REFERENCES campaigns (id),
    wait_for interval,
    wait_until time,
    best_hour boolean NOT NULL DEFAULT false,
    timeout interval,
    of_step text,
    PRIMARY KEY (journey_id, version, step),
    CONSTRAINT "journey send step: campaign_id, and only a send step"
        CHECK ((kind = 'send') = (campaign_id IS NOT NULL)),
    CONSTRAINT "journey wait: one of wait_for, wait_until, best_hour; only it"
        CHECK (CASE WHEN kind = 'wait' THEN num_nonnulls(wait_for, wait_until) + best_hour::int = 1
                    ELSE wait_for IS NULL AND wait_until IS NULL AND NOT best_hour END),
    CONSTRAINT "journey timeout: only a wait_for step"
        CHECK (timeout IS NULL OR kind = 'wait_for'),
    CONSTRAINT "journey of_step: only a wait_for or branch step"
        CHECK (of_step IS NULL OR kind IN ('wait_for', 'branch'))
);
COMMENT ON TABLE journey_steps IS 'The steps of each version of a journey: a send (its campaign is the message), a wait (a duration, a local time of day, the user''s best hour), a wait_for (an event, with a timeout), a branch, a split or an exit. A member stays on the version it entered.';

CREATE TABLE journey_edges (
    journey_id bigint NOT NULL,
    version integer NOT NULL,
    from_step text NOT NULL,
    position integer NOT NULL,
    kind text NOT NULL
        CONSTRAINT "journey edge kind: one of contract 11s table"
        CHECK (kind IN ('next', 'reply', 'action', 'text', 'received', 'opened', 'converted', 'segment', 'timeout', 'share', 'else')),
    rule jsonb NOT NULL DEFAULT '{}',
    to_step text,
    PRIMARY KEY (journey_id, version, from_step, position),
    FOREIGN KEY (journey_id, version, from_step) REFERENCES journey_steps (journey_id, version, step) ON DELETE CASCADE
);
COMMENT ON TABLE journey_edges IS 'Where a member goes from a step: the first edge in position order that holds is taken (kind and rule: what takes it; to_step NULL: the member leaves). Rules are evaluated in SQL (herald_text_rule_holds for typed text).';

CREATE TABLE journey_members (
    id bigserial PRIMARY KEY,
    journey_id bigint NOT NULL REFERENCES journeys (id) ON DELETE CASCADE,
    version integer NOT NULL,
    user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    step text,
    state text NOT NULL DEFAULT 'active'
        CONSTRAINT "journey member state: active, done, goal, held_out or exited"
        CHECK (state IN ('active', 'done', 'goal', 'held_out', 'exited')),
    entered_at timestamptz NOT NULL DEFAULT now(),
    reached_at timestamptz NOT NULL DEFAULT now(),
    due_at timestamptz,
    waiting boolean NOT NULL DEFAULT false,
    moves integer NOT NULL DEFAULT 0,
    left_at timestamptz,
    captured jsonb NOT NULL DEFAULT '{}',
    CONSTRAINT "journey member: due while active, and only then" CHECK ((state = 'active') = (due_at IS NOT NULL)),
    CONSTRAINT "journey member: at a step while active" CHECK (state <> 'active' OR step IS NOT NULL)
);
COMMENT ON TABLE journey_members IS 'Each user''s progress through a journey, one row per entry: the step reached and when (reached_at), when a run looks at it next (due_at), whether an event wakes it (waiting: at a wait_for), how many moves it took (moves, the seq of its last transition) and the replies it captured, by send step. At most one active row per journey and user (journey_members_once).';

CREATE UNIQUE INDEX journey_members_once ON journey_members (journey_id, user_id) WHERE state = 'active';
COMMENT ON INDEX journey_members_once IS 'A user is in a journey at most once at a time.';
CREATE INDEX journey_members_due ON journey_members (due_at) WHERE state = 'active';
COMMENT ON INDEX journey_members_due IS 'The members a run advances: active and due, read in due order without looking at the others.';
CREATE INDEX journey_members_waiting ON journey_members (user_id) WHERE state = 'active' AND waiting;
COMMENT ON INDEX journey_members_waiting IS 'The members an event of their user wakes (herald_journey_wake): only those waiting for one.';

CREATE TABLE journey_transitions (
    member_id bigint NOT NULL REFERENCES journey_members (id) ON DELETE CASCADE,
    seq integer NOT NULL,
    journey_id bigint NOT NULL,
    from_step text NOT NULL,
    position integer,
    kind text NOT NULL,
    to_step text,
    at timestamptz NOT NULL DEFAULT now(),
    run_id bigint,
    PRIMARY KEY (member_id, seq)
);
COMMENT ON TABLE journey_transitions IS 'Every move a member took, append-only: from which step, by which edge (position and kind; kind goal or exited for a journey-wide exit), to which step (NULL: it left). seq is the member''s count of moves, so a move written twice is refused by the key. What the analysts'' flow counts.';
CREATE INDEX journey_transitions_journey ON journey_transitions (journey_id, from_step);
COMMENT ON INDEX journey_transitions_journey IS 'A journey''s flow, counted by step and edge.';

-- Typed text against a rule: the one authority of text rules.
CREATE FUNCTION herald_text_fold(p_text text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN translate(lower(p_text), 'àáâãäåāăąçćčďèéêëēėęěğìíîïīįıłñńňòóôõöøōőŕřśšşťùúûüūůűųýÿźżž',
                                    'aaaaaaaaacccdeeeeeeeegiiiiiiilnnnoooooooorrsssstuuuuuuuuyyzzz');
COMMENT ON FUNCTION herald_text_fold(p_text text) IS 'Text as text rules compare it: lower case, Latin accents removed.';

CREATE FUNCTION herald_text_rule_problem(p_rule jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
DECLARE
    v_keys text[];
BEGIN
    IF jsonb_typeof(p_rule) IS DISTINCT FROM 'object' THEN
        RETURN 'a text rule is an object with one of any_words, pattern, number or empty';
    END IF;
    SELECT array_agg(k) INTO v_keys FROM jsonb_object_keys(p_rule) k;
    IF cardinality(v_keys) IS DISTINCT FROM 1 OR NOT v_keys[1] = ANY (ARRAY['any_words', 'pattern', 'number', 'empty']) THEN
        RETURN 'a text rule has exactly one of any_words, pattern, number or empty, not ' || coalesce(array_to_string(v_keys, ', '), 'none');
    END IF;
    CASE v_keys[1]
    WHEN 'any_words' THEN
        IF jsonb_typeof(p_rule->'any_words') <> 'object' OR p_rule->'any_words' = '{}'
           OR EXISTS (SELECT 1 FROM jsonb_each(p_rule->'any_words') e
                      WHERE jsonb_typeof(e.value) <> 'array' OR jsonb_array_length(e.value) = 0
                         OR EXISTS (SELECT 1 FROM jsonb_array_elements(e.value) w
                                    WHERE jsonb_typeof(w) <> 'string' OR btrim(w #>> '{}') = '')) THEN
            RETURN 'any_words maps each locale (or "*") to a list of words, none empty';
        END IF;
    WHEN 'pattern' THEN
        IF jsonb_typeof(p_rule->'pattern') <> 'string' THEN
            RETURN 'pattern is a regular expression, as a string';
        END IF;
        BEGIN
            PERFORM '' ~* (p_rule->>'pattern');
        EXCEPTION WHEN invalid_regular_expression THEN
            RETURN 'pattern ' || (p_rule->>'pattern') || ' is not a regular expression: ' || SQLERRM;
        END;
    WHEN 'number' THEN
        IF jsonb_typeof(p_rule->'number') <> 'array' OR jsonb_array_length(p_rule->'number') <> 2
           OR jsonb_typeof(p_rule->'number'->0) <> 'number' OR jsonb_typeof(p_rule->'number'->1) <> 'number'
           OR (p_rule->'number'->>0)::numeric > (p_rule->'number'->>1)::numeric THEN
            RETURN 'number is a range of two numbers, the lower first: [1, 5]';
        END IF;
    WHEN 'empty' THEN
        IF jsonb_typeof(p_rule->'empty') <> 'boolean' THEN
            RETURN 'empty is true or false';
        END IF;
    END CASE;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION herald_text_rule_problem(p_rule jsonb) IS 'What is wrong with a text rule, or NULL: the check herald_journey_problems makes of each text edge.';

CREATE FUNCTION herald_text_rule_holds(p_rule jsonb, p_text text, p_locale text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN p_rule ? 'empty' THEN (coalesce(btrim(p_text), '') = '') = (p_rule->>'empty')::boolean
        WHEN p_text IS NULL THEN false
        WHEN p_rule ? 'any_words' THEN EXISTS (
            SELECT 1
            FROM jsonb_array_elements_text(coalesce(p_rule->'any_words'->p_locale,
                                                    p_rule->'any_words'->split_part(p_locale, '-', 1),
                                                    p_rule->'any_words'->'*', '[]')) w
            WHERE herald_text_fold(p_text) ~ ('\m' || regexp_replace(herald_text_fold(btrim(w)), '([.^$*+?()\[\]{}|\\-])', '\\\1', 'g') || '\M'))
        WHEN p_rule ? 'pattern' THEN p_text ~* (p_rule->>'pattern')
        WHEN p_rule ? 'number' THEN
            btrim(p_text) ~ '^[+-]?[0-9]{1,15}([.,][0-9]{1,15})?$'
            AND replace(btrim(p_text), ',', '.')::numeric BETWEEN (p_rule->'number'->>0)::numeric AND (p_rule->'number'->>1)::numeric
        ELSE false
    END
$$;
COMMENT ON FUNCTION herald_text_rule_holds(p_rule jsonb, p_text text, p_locale text) IS 'Whether typed text matches a text rule (contract 11): any_words (a whole word or phrase of the reply''s locale, its language, else "*", case and Latin accents ignored), pattern (a regular expression, case ignored), number (a number in the closed range, with . or , as its decimal mark), empty (no text, or only spaces). The one authority of text rules; JourneyRuleTests holds its golden table.';

-- Which edge kinds each step kind takes.
CREATE FUNCTION herald_journey_edge_allowed(p_step_kind text, p_edge_kind text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE p_step_kind
        WHEN 'send' THEN p_edge_kind = 'next'
        WHEN 'wait' THEN p_edge_kind = 'next'
        WHEN 'wait_for' THEN p_edge_kind IN ('reply', 'action', 'text', 'received', 'opened', 'converted', 'segment', 'timeout')
        WHEN 'branch' THEN p_edge_kind IN ('reply', 'action', 'text', 'received', 'opened', 'segment', 'else')
        WHEN 'split' THEN p_edge_kind = 'share'
        ELSE false
    END;
COMMENT ON FUNCTION herald_journey_edge_allowed(p_step_kind text, p_edge_kind text) IS 'Whether a step of this kind takes an edge of that kind (an exit takes none): the table of contract 11.';

CREATE FUNCTION herald_journey_problems(p_journey bigint, p_version integer)
    RETURNS TABLE (step text, problem text)
    LANGUAGE sql STABLE
    AS $$
    WITH j AS (
        SELECT * FROM journeys WHERE id = p_journey
    ), s AS (
        SELECT * FROM journey_steps WHERE journey_id = p_journey AND version = p_version
    ), e AS (
        SELECT * FROM journey_edges WHERE journey_id = p_journey AND version = p_version
    ), reached AS (
        -- The steps a member can reach from the first one.
        WITH RECURSIVE r(step) AS (
            SELECT j.first_step FROM j WHERE EXISTS (SELECT 1 FROM s WHERE s.step = j.first_step)
            UNION
            SELECT e.to_step FROM r JOIN e ON e.from_step = r.step WHERE e.to_step IS NOT NULL
        )
        SELECT step FROM r
    ), loops AS (
        -- Paths through steps that decide at once (send, branch, split): one that comes back
        -- to its start is a loop no wait ends, named once, by its first step in key order.
        WITH RECURSIVE p(start, at, path, closed) AS (
            SELECT s.step, s.step, ARRAY[s.step], false FROM s WHERE s.kind IN ('send', 'branch', 'split')
            UNION ALL
            SELECT p.start, e.to_step, p.path || e.to_step, e.to_step = p.start
            FROM p JOIN e ON e.from_step = p.at JOIN s ON s.step = e.to_step
            WHERE NOT p.closed AND s.kind IN ('send', 'branch', 'split')
              AND (e.to_step = p.start OR NOT e.to_step = ANY (p.path))
        )
        SELECT DISTINCT ON (start) start, path FROM p
        WHERE closed AND start = (SELECT min(x) FROM unnest(path) x)
        ORDER BY start, cardinality(path)
    )
    SELECT NULL::text, 'journey ' || p_journey || ' has no version ' || p_version
    WHERE NOT EXISTS (SELECT 1 FROM s)
    UNION ALL
    SELECT j.first_step, 'first_step ' || j.first_step || ' is not a step of version ' || p_version
    FROM j WHERE EXISTS (SELECT 1 FROM s) AND NOT EXISTS (SELECT 1 FROM s WHERE s.step = j.first_step)
    UNION ALL
    SELECT e.from_step, 'edge ' || e.position || ' goes to ' || e.to_step || ', which is not a step'
    FROM e WHERE e.to_step IS NOT NULL AND NOT EXISTS (SELECT 1 FROM s WHERE s.step = e.to_step)
    UNION ALL
    SELECT s.step, 'nothing reaches it from ' || (SELECT first_step FROM j)
    FROM s WHERE EXISTS (SELECT 1 FROM reached) AND NOT EXISTS (SELECT 1 FROM reached r WHERE r.step = s.step)
    UNION ALL
    SELECT s.step, 'a wait_for needs a timeout'
    FROM s WHERE s.kind = 'wait_for' AND s.timeout IS NULL
    UNION ALL
    SELECT s.step, 'a wait_for needs a timeout edge'
    FROM s WHERE s.kind = 'wait_for' AND NOT EXISTS (SELECT 1 FROM e WHERE e.from_step = s.step AND e.kind = 'timeout')
    UNION ALL
    SELECT s.step, 'a ' || s.kind || ' step needs an edge'
    FROM s WHERE s.kind <> 'exit' AND NOT EXISTS (SELECT 1 FROM e WHERE e.from_step = s.step)
    UNION ALL
    SELECT s.step, 'a branch needs an else edge, last'
    FROM s WHERE s.kind = 'branch'
      AND NOT EXISTS (SELECT 1 FROM e WHERE e.from_step = s.step AND e.kind = 'else'
                      AND e.position = (SELECT max(x.position) FROM e x WHERE x.from_step = s.step))
    UNION ALL
    SELECT e.from_step, 'edge ' || e.position || ': a ' || s.kind || ' step takes no ' || e.kind || ' edge'
    FROM e JOIN s ON s.step = e.from_step WHERE NOT herald_journey_edge_allowed(s.kind, e.kind)
    UNION ALL
    SELECT e.from_step, 'edge ' || e.position || ': ' || herald_text_rule_problem(e.rule)
    FROM e WHERE e.kind = 'text' AND herald_text_rule_problem(e.rule) IS NOT NULL
    UNION ALL
    SELECT e.from_step, 'edge ' || e.position || ': an action edge names its action: {"action": "love_it"}'
    FROM e WHERE e.kind = 'action' AND jsonb_typeof(e.rule->'action') IS DISTINCT FROM 'string'
    UNION ALL
    SELECT e.from_step, 'edge ' || e.position || ': a converted edge names its event: {"event": "purchase"}'
    FROM e WHERE e.kind = 'converted' AND coalesce(e.rule->>'event', '') !~ '^[A-Za-z0-9_.:-]{1,100}$'
    UNION ALL
    SELECT e.from_step, 'edge ' || e.position || ': a segment edge names a segment that exists and whether the user is in it: {"segment_id": 3, "in": true}'
    FROM e WHERE e.kind = 'segment'
      AND (jsonb_typeof(e.rule->'in') IS DISTINCT FROM 'boolean' OR jsonb_typeof(e.rule->'segment_id') IS DISTINCT FROM 'number'
           OR NOT EXISTS (SELECT 1 FROM segments g WHERE g.id::text = e.rule->>'segment_id'))
    UNION ALL
    SELECT e.from_step, 'edge ' || e.position || ': a share edge gives its percent: {"share": 50}'
    FROM e WHERE e.kind = 'share'
      AND (jsonb_typeof(e.rule->'share') IS DISTINCT FROM 'number' OR (e.rule->>'share') !~ '^[0-9]{1,3}$'
           OR (e.rule->>'share')::int NOT BETWEEN 1 AND 100)
    UNION ALL
    SELECT s.step, 'its shares add up to ' || sum((e.rule->>'share')::int) || ', not 100'
    FROM s JOIN e ON e.from_step = s.step
    WHERE s.kind = 'split' AND e.kind = 'share' AND (e.rule->>'share') ~ '^[0-9]{1,3}$'
    GROUP BY s.step HAVING sum((e.rule->>'share')::int) <> 100
    UNION ALL
    SELECT s.step, 'edges of replies, receipts and opens listen to a send step: of_step names none'
    FROM s WHERE EXISTS (SELECT 1 FROM e WHERE e.from_step = s.step AND e.kind IN ('reply', 'action', 'text', 'received', 'opened'))
      AND NOT EXISTS (SELECT 1 FROM s x WHERE x.step = s.of_step AND x.kind = 'send')
    UNION ALL
    SELECT s.step, 'its campaign ' || s.campaign_id || ' is not a message of this journey (campaigns.journey_id)'
    FROM s WHERE s.kind = 'send'
      AND NOT EXISTS (SELECT 1 FROM campaigns c WHERE c.id = s.campaign_id AND c.journey_id = p_journey)
    UNION ALL
    SELECT l.start, 'a loop with no wait in it: ' || array_to_string(l.path, ' → ')
    FROM loops l
$$;
COMMENT ON FUNCTION herald_journey_problems(p_journey bigint, p_version integer) IS 'Why a version of a journey cannot run, one row per problem with the step it names (contract 11): the one check, made when the journey is scheduled or run (journeys_checked) and shown by a preview.';

CREATE FUNCTION herald_journey_checked() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
    v_problems text;
BEGIN
    IF NEW.status IN ('scheduled', 'running')
       AND (TG_OP = 'INSERT' OR OLD.status NOT IN ('scheduled', 'running') OR OLD.version <> NEW.version
            OR OLD.first_step <> NEW.first_step) THEN
        SELECT string_agg(coalesce('step ' || p.step || ': ', '') || p.problem, '; ' ORDER BY p.step NULLS FIRST, p.problem)
        INTO v_problems FROM herald_journey_problems(NEW.id, NEW.version) p;
        IF v_problems IS NOT NULL THEN
            RAISE EXCEPTION 'journey "%" cannot run: %', NEW.name, v_problems
                USING ERRCODE = 'check_violation', HINT = 'SELECT * FROM herald_journey_problems(' || NEW.id || ', ' || NEW.version || ');';
        END IF;
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION herald_journey_checked() IS 'Refuses a journey scheduled or run (or given a new version while it runs) with every problem herald_journey_problems finds, each naming its step. Fired by journeys_checked.';

CREATE TRIGGER journeys_checked BEFORE INSERT OR UPDATE ON journeys
    FOR EACH ROW EXECUTE FUNCTION herald_journey_checked();
COMMENT ON TRIGGER journeys_checked ON journeys IS 'A journey that cannot run is refused when it is scheduled or run (herald_journey_checked).';

-- Waking members at a wait_for: in the transaction that stores the event.
CREATE FUNCTION herald_journey_wake() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
    IF TG_TABLE_NAME = 'receipts' THEN
        UPDATE journey_members m SET due_at = least(m.due_at, now())
        FROM (SELECT DISTINCT dv.user_id FROM new_rows n JOIN devices dv ON dv.id = n.device_id) u
        WHERE m.user_id = u.user_id AND m.state = 'active' AND m.waiting;
    ELSE
        UPDATE journey_members m SET due_at = least(m.due_at, now())
        FROM (SELECT DISTINCT n.user_id FROM new_rows n) u
        WHERE m.user_id = u.user_id AND m.state = 'active' AND m.waiting;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION herald_journey_wake() IS 'Makes the members waiting for an event (journey_members.waiting) of the users of the rows just stored due now, in the storing transaction: an acknowledged reply, receipt or conversion is never missed by a wait_for, and a run reads only the members woken. Fired by replies_wake_journeys, receipts_wake_journeys and conversions_wake_journeys.';

CREATE TRIGGER replies_wake_journeys AFTER INSERT ON replies
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_journey_wake();
CREATE TRIGGER receipts_wake_journeys AFTER INSERT ON receipts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_journey_wake();
CREATE TRIGGER conversions_wake_journeys AFTER INSERT ON conversions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_journey_wake();
COMMENT ON TRIGGER replies_wake_journeys ON replies IS 'Wakes the journey members waiting for a reply of these users (herald_journey_wake).';
COMMENT ON TRIGGER receipts_wake_journeys ON receipts IS 'Wakes the journey members waiting for a receipt of these users (herald_journey_wake).';
COMMENT ON TRIGGER conversions_wake_journeys ON conversions IS 'Wakes the journey members waiting for a conversion of these users, or reaching their goal (herald_journey_wake).';

REVOKE ALL ON FUNCTION herald_journey_wake() FROM PUBLIC;

GRANT SELECT, INSERT, UPDATE, DELETE ON journeys, journey_steps, journey_edges TO herald_marketer;
GRANT SELECT, USAGE ON SEQUENCE journeys_id_seq TO herald_marketer;
GRANT INSERT (journey_id), UPDATE (journey_id) ON campaigns TO herald_marketer;
GRANT SELECT ON journey_members, journey_transitions TO herald_marketer;
GRANT SELECT ON journeys, journey_steps, journey_edges TO herald_job;
GRANT SELECT, INSERT, UPDATE ON journey_members TO herald_job;
GRANT SELECT, USAGE ON SEQUENCE journey_members_id_seq TO herald_job;
GRANT SELECT, INSERT ON journey_transitions TO herald_job;
