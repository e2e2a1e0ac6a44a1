-- Herald schema: categories belong to apps (docs/DESIGN.md, point 15 and
-- contract 5).
--
-- A category is shared by every app (apps NULL, as every category of a
-- database from before) or belongs to the apps it names: only those apps'
-- notification-config documents hold it, and only campaigns to those apps
-- may use it. Category ids stay unique in the deployment (a reply's action
-- is checked against its campaign's category by id); actions belong to the
-- categories that list them, so an app's document holds only its
-- categories' actions.
--
-- applied-if: SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'categories' AND column_name = 'apps')

ALTER TABLE categories ADD COLUMN apps text[];

-- Why a campaign of `campaign_apps` (NULL: every app) may not use a category
-- of `category_apps` (NULL: every app), or NULL when it may. The one
-- authority for the rule: the campaign and category triggers both ask it.
CREATE FUNCTION herald_category_apps_problem(category text, category_apps text[], campaign_apps text[])
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN category_apps IS NULL THEN NULL
        WHEN campaign_apps IS NULL THEN
            format('category "%s" belongs to the apps %s only, and the campaign goes to every app (apps NULL): set its apps to some of those',
                   category, array_to_string(category_apps, ', '))
        WHEN NOT campaign_apps <@ category_apps THEN
            format('category "%s" belongs to the apps %s only, and the campaign also goes to %s: those apps'' devices do not know it',
                   category, array_to_string(category_apps, ', '),
                   array_to_string(ARRAY(SELECT x FROM unnest(campaign_apps) x WHERE x <> ALL (category_apps) ORDER BY x), ', '))
    END
$$;

-- What is wrong with a list of apps (NULL: every app), or NULL when nothing
-- is: the one check of campaigns.apps and categories.apps.
CREATE FUNCTION herald_apps_problem(p_apps text[]) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN p_apps IS NULL THEN NULL
        WHEN cardinality(p_apps) = 0 THEN 'apps must name at least one app, or be NULL for every app'
        ELSE (SELECT 'apps names no app ' || string_agg(x, ', ') || ': see SELECT name FROM apps'
              FROM unnest(p_apps) x WHERE NOT EXISTS (SELECT 1 FROM apps WHERE name = x))
    END
$$;

CREATE OR REPLACE FUNCTION herald_check_campaign_apps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    problem text;
BEGIN
    -- An occurrence of a series (herald_occurrence) goes to the series' apps.
    IF TG_OP = 'INSERT' AND NEW.series_id IS NOT NULL AND NEW.apps IS NULL THEN
        SELECT apps INTO NEW.apps FROM campaigns WHERE id = NEW.series_id;
    END IF;
    problem := herald_apps_problem(NEW.apps);
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'campaign %', problem USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE FUNCTION herald_check_category_apps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    problem text := herald_apps_problem(NEW.apps);
    c record;
BEGIN
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'category "%": %', NEW.id, problem USING ERRCODE = 'check_violation';
    END IF;
    -- A campaign that may still send keeps its category usable.
    IF TG_OP = 'UPDATE' THEN
        FOR c IN SELECT id, name, apps FROM campaigns
                 WHERE category_id = NEW.id AND status IN ('draft', 'scheduled', 'running', 'paused') ORDER BY id LOOP
            problem := herald_category_apps_problem(NEW.id, NEW.apps, c.apps);
            IF problem IS NOT NULL THEN
                RAISE EXCEPTION 'campaign % "%" uses it: %', c.id, c.name, problem
                    USING ERRCODE = 'check_violation',
                          HINT = 'Change the campaign''s apps (or finish it) first.';
            END IF;
        END LOOP;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER categories_apps_check BEFORE INSERT OR UPDATE OF apps ON categories
    FOR EACH ROW EXECUTE FUNCTION herald_check_category_apps();

-- Fires after campaigns_apps_exist (triggers fire in name order), so an
-- occurrence is checked with the apps it inherits from its series.
CREATE FUNCTION herald_check_campaign_category_apps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    problem text;
BEGIN
    IF NEW.category_id IS NOT NULL THEN
        SELECT herald_category_apps_problem(k.id, k.apps, NEW.apps) INTO problem FROM categories k WHERE k.id = NEW.category_id;
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION 'campaign "%": %', NEW.name, problem
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER campaigns_category_apps BEFORE INSERT OR UPDATE OF category_id, apps ON campaigns
    FOR EACH ROW EXECUTE FUNCTION herald_check_campaign_category_apps();
