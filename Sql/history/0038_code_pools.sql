-- Herald schema: codes handed out once (docs/marketers.md, "Codes handed
-- out once"; DESIGN, "Personal text").
--
--   * a pool (code_pools) holds codes (pool_codes) the marketer loads, such
--     as coupons or vouchers;
--   * a campaign that names a pool (campaigns.code_pool) gives each user it
--     reaches one code, as {{ code }} in its templates (a sealed field, as a
--     rule): the same code on each of the user's devices, never one code to
--     two users, and the same code again when a notification is repeated;
--   * the run draws a user's code before their first notification is sent
--     and keeps it on the code's row (campaign_id, user_id); a user with no
--     code left is skipped with that reason;
--   * a change to a pool an approved campaign draws from withdraws its approval;
--   * analysts see who got which code, and the conversions that name it.
-- applied-if: SELECT to_regclass('public.pool_codes') IS NOT NULL

CREATE TABLE code_pools (
    name       text PRIMARY KEY
               CONSTRAINT "code pool name: 1 to 100 characters, no spaces" CHECK (name ~ '^[A-Za-z0-9_.:-]{1,100}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pool_codes (
    pool        text   NOT NULL REFERENCES code_pools (name) ON DELETE CASCADE,
    code        text   NOT NULL CONSTRAINT "a code is 1 to 200 characters" CHECK (length(code) BETWEEN 1 AND 200),
    -- Who drew it: written by the run only.
    campaign_id bigint,
    user_id     bigint,
    drawn_at    timestamptz,
    PRIMARY KEY (pool, code),
    CONSTRAINT "a drawn code names its campaign, user and time" CHECK (
        (campaign_id IS NULL) = (user_id IS NULL) AND (campaign_id IS NULL) = (drawn_at IS NULL))
);
-- One code per user and campaign; the free codes in order, for the draw.
-- Not partial: a lookup joined on the campaign uses it (free codes, NULLs, never collide).
CREATE UNIQUE INDEX pool_codes_one_per_user ON pool_codes (campaign_id, user_id);
CREATE INDEX pool_codes_free ON pool_codes (pool, code) WHERE campaign_id IS NULL;

ALTER TABLE campaigns ADD COLUMN code_pool text REFERENCES code_pools (name);
INSERT INTO campaign_approval_columns (column_name, written_by, withdraws, why) VALUES
    ('code_pool', 'marketer', 'fields', 'the codes devices get');
GRANT INSERT (code_pool), UPDATE (code_pool) ON campaigns TO herald_marketer;

GRANT SELECT, INSERT, DELETE ON code_pools TO herald_marketer;
GRANT SELECT, INSERT, DELETE, TRUNCATE ON pool_codes TO herald_marketer;
GRANT UPDATE (code) ON pool_codes TO herald_marketer;
GRANT SELECT ON code_pools TO herald_job;
GRANT SELECT, UPDATE (campaign_id, user_id, drawn_at) ON pool_codes TO herald_job;

-- A change to a pool's codes (not a draw) withdraws the approval of every
-- approved, unfinished campaign that draws from it.
CREATE FUNCTION herald_pool_approval_guard() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_pools text[];
    v_id bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT pool) INTO v_pools FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT array_agg(DISTINCT pool) INTO v_pools FROM old_rows;
    END IF;
    FOR v_id IN
        SELECT c.id FROM campaigns c
        WHERE c.approved_at IS NOT NULL AND c.status IN ('draft', 'scheduled', 'running', 'paused')
          AND c.code_pool IS NOT NULL
          AND CASE WHEN TG_OP = 'TRUNCATE' THEN true ELSE c.code_pool = ANY (v_pools) END
        ORDER BY c.id
    LOOP
        PERFORM herald_clear_approval(v_id, 'changed: code pool ' || (SELECT code_pool FROM campaigns WHERE id = v_id));
    END LOOP;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION herald_pool_approval_guard() FROM PUBLIC;
CREATE TRIGGER pool_codes_inserted AFTER INSERT ON pool_codes
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_pool_approval_guard();
CREATE TRIGGER pool_codes_deleted AFTER DELETE ON pool_codes
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_pool_approval_guard();
CREATE TRIGGER pool_codes_truncated AFTER TRUNCATE ON pool_codes
FOR EACH STATEMENT EXECUTE FUNCTION herald_pool_approval_guard();
-- A code's text changed (a draw writes the other columns, and withdraws nothing).
CREATE FUNCTION herald_pool_code_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_id bigint;
BEGIN
    FOR v_id IN
        SELECT c.id FROM campaigns c
        WHERE c.approved_at IS NOT NULL AND c.status IN ('draft', 'scheduled', 'running', 'paused')
          AND c.code_pool = NEW.pool
        ORDER BY c.id
    LOOP
        PERFORM herald_clear_approval(v_id, 'changed: code pool ' || NEW.pool);
    END LOOP;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION herald_pool_code_changed() FROM PUBLIC;
CREATE TRIGGER pool_codes_code_changed AFTER UPDATE OF code ON pool_codes
FOR EACH ROW WHEN (OLD.code IS DISTINCT FROM NEW.code) EXECUTE FUNCTION herald_pool_code_changed();

-- A conversion may name the code it redeemed.
ALTER TABLE conversions ADD COLUMN code text;
GRANT INSERT (code) ON conversions TO herald_intake;

-- Who got which code, and the conversions that name it.
CREATE VIEW analyst.codes_given AS
SELECT pc.campaign_id, c.name AS campaign, pc.pool, pc.code, u.external_id AS user_external_id, pc.drawn_at,
       (SELECT count(*) FROM conversions v WHERE v.user_id = pc.user_id AND v.code = pc.code) AS conversions,
       (SELECT sum(v.amount) FROM conversions v WHERE v.user_id = pc.user_id AND v.code = pc.code) AS amount
FROM pool_codes pc
JOIN campaigns c ON c.id = pc.campaign_id
JOIN users u ON u.id = pc.user_id
WHERE pc.campaign_id IS NOT NULL;

-- How much of each pool is left.
CREATE VIEW analyst.code_pools AS
SELECT p.name AS pool, count(pc.code) AS codes, count(pc.campaign_id) AS drawn, count(pc.code) - count(pc.campaign_id) AS remaining
FROM code_pools p LEFT JOIN pool_codes pc ON pc.pool = p.name
GROUP BY p.name;

GRANT SELECT ON analyst.codes_given, analyst.code_pools TO herald_analyst;
