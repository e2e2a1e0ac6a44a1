-- Herald schema, part 1: the audience, the catalogue of notification actions,
-- campaigns, the delivery ledger, replies and runs.
--
-- Applied by `herald migrate` (in one transaction, recorded with its checksum)
-- or by hand: psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -1 -f Sql/0001_init.sql

-- Settings that every run reads: one row, changed with UPDATE.
CREATE TABLE settings (
    id                     boolean PRIMARY KEY DEFAULT true CHECK (id),
    frequency_cap          integer NOT NULL DEFAULT 3 CHECK (frequency_cap > 0),
    frequency_window       interval NOT NULL DEFAULT '24 hours',
    quiet_hours_start      time NOT NULL DEFAULT '22:00',
    quiet_hours_end        time NOT NULL DEFAULT '08:00'
);
INSERT INTO settings DEFAULT VALUES;

-- True when PostgreSQL knows the time zone name (e.g. 'Europe/Paris').
CREATE FUNCTION herald_is_time_zone(tz text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM now() AT TIME ZONE tz;
    RETURN true;
EXCEPTION WHEN invalid_parameter_value THEN
    RETURN false;
END $$;

-- '2.10.3' → {2,10,3}; non-numeric parts count as 0, so versions compare numerically.
-- NULL (version unknown) stays NULL: such a device matches no version rule.
CREATE FUNCTION herald_version(v text) RETURNS integer[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(coalesce(nullif(substring(part FROM '^[0-9]+'), '')::integer, 0) ORDER BY n), '{}')
    FROM unnest(string_to_array(v, '.')) WITH ORDINALITY AS t(part, n)
$$;

-- When a device may be notified: `at` itself outside quiet hours, otherwise the
-- end of the quiet hours in the user's own time zone.
CREATE FUNCTION herald_quiet_until(tz text, at timestamptz, q_start time, q_end time)
RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
    WITH l AS (SELECT (at AT TIME ZONE tz) AS local_ts)
    SELECT CASE
        WHEN q_start = q_end THEN at
        WHEN q_start < q_end AND local_ts::time >= q_start AND local_ts::time < q_end
            THEN (local_ts::date + q_end) AT TIME ZONE tz
        WHEN q_start > q_end AND local_ts::time >= q_start
            THEN (local_ts::date + 1 + q_end) AT TIME ZONE tz
        WHEN q_start > q_end AND local_ts::time < q_end
            THEN (local_ts::date + q_end) AT TIME ZONE tz
        ELSE at
    END
    FROM l
$$;

CREATE TABLE users (
    id             bigserial PRIMARY KEY,
    external_id    text NOT NULL UNIQUE,
    locale         text NOT NULL DEFAULT 'en',
    time_zone      text NOT NULL DEFAULT 'UTC',
    attributes     jsonb NOT NULL DEFAULT '{}',
    opted_out_at   timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "user time_zone must be a known zone name, e.g. Europe/Paris"
        CHECK (herald_is_time_zone(time_zone)),
    CONSTRAINT "user attributes must be a JSON object"
        CHECK (jsonb_typeof(attributes) = 'object')
);

CREATE TABLE devices (
    id              bigserial PRIMARY KEY,
    user_id         bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token           text NOT NULL UNIQUE,
    environment     text NOT NULL DEFAULT 'production',
    public_key      text,
    key_id          text,
    app_version     text,
    last_seen_at    timestamptz,
    invalidated_at  timestamptz,
    invalid_reason  text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "device token must be lowercase hex, 64 to 200 characters"
        CHECK (token ~ '^[0-9a-f]{64,200}$'),
    CONSTRAINT "device environment must be production or sandbox"
        CHECK (environment IN ('production', 'sandbox')),
    CONSTRAINT "device public_key must be base64 of a 32-byte X25519 key"
        CHECK (public_key IS NULL OR public_key ~ '^[A-Za-z0-9+/]{43}=$'),
    CONSTRAINT "device key_id must be 1 to 64 bytes"
        CHECK (key_id IS NULL OR octet_length(key_id) BETWEEN 1 AND 64),
    CONSTRAINT "device public_key and key_id go together"
        CHECK ((public_key IS NULL) = (key_id IS NULL))
);
CREATE INDEX devices_user ON devices (user_id);

-- A marketer's rule over users and devices (see README, "Segments").
CREATE TABLE segments (
    id           bigserial PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    rule         jsonb NOT NULL DEFAULT '{}',
    description  text,
    CONSTRAINT "segment rule must be a JSON object" CHECK (jsonb_typeof(rule) = 'object')
);

-- UNNotificationAction: a button or a text input. options: 1 authenticationRequired,
-- 2 destructive, 4 foreground.
CREATE TABLE actions (
    id                   text PRIMARY KEY,
    title                text NOT NULL,
    kind                 text NOT NULL DEFAULT 'button',
    options              integer NOT NULL DEFAULT 0,
    text_button_title    text,
    text_placeholder     text,
    CONSTRAINT "action kind must be button or text_input"
        CHECK (kind IN ('button', 'text_input')),
    CONSTRAINT "action options: 1 authRequired, 2 destructive, 4 foreground"
        CHECK (options >= 0 AND options & ~7 = 0),
    CONSTRAINT "a text_input action needs text_button_title"
        CHECK (kind <> 'text_input' OR text_button_title IS NOT NULL),
    CONSTRAINT "only text_input actions have text_button_title/placeholder"
        CHECK (kind = 'text_input' OR (text_button_title IS NULL AND text_placeholder IS NULL)),
    CONSTRAINT "action id must not be empty" CHECK (id <> '')
);

-- UNNotificationCategory. options: 1 customDismissAction.
CREATE TABLE categories (
    id       text PRIMARY KEY,
    options  integer NOT NULL DEFAULT 0,
    CONSTRAINT "category options are bit 1 (customDismissAction)"
        CHECK (options IN (0, 1)),
    CONSTRAINT "category id must not be empty" CHECK (id <> '')
);

CREATE TABLE category_actions (
    category_id  text NOT NULL REFERENCES categories (id) ON DELETE CASCADE,
    action_id    text NOT NULL REFERENCES actions (id),
    position     integer NOT NULL,
    PRIMARY KEY (category_id, action_id),
    UNIQUE (category_id, position)
);

CREATE FUNCTION herald_category_actions_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    SELECT count(*) INTO n FROM category_actions WHERE category_id = NEW.category_id;
    IF n > 4 THEN
        RAISE EXCEPTION 'category "%" would have % actions; iOS shows at most 4', NEW.category_id, n
            USING ERRCODE = 'check_violation',
                  HINT = 'Remove an action from the category before adding another.';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER category_actions_at_most_4
    AFTER INSERT OR UPDATE ON category_actions
    FOR EACH ROW EXECUTE FUNCTION herald_category_actions_check();

CREATE TABLE campaigns (
    id                  bigserial PRIMARY KEY,
    name                text NOT NULL,
    kind                text NOT NULL,
    status              text NOT NULL DEFAULT 'draft',
    segment_id          bigint REFERENCES segments (id),
    -- {"en": {"title": "…", "subtitle": "…", "body": "…"}, "zh-Hans": {…}}
    content             jsonb NOT NULL,
    default_locale      text NOT NULL DEFAULT 'en',
    media_url           text,
    media_type          text,
    category_id         text REFERENCES categories (id),
    custom              jsonb NOT NULL DEFAULT '{}',
    sensitive           jsonb,
    send_at             timestamptz NOT NULL DEFAULT now(),
    expires_at          timestamptz,
    priority            integer NOT NULL DEFAULT 10,
    collapse_id         text,
    thread_id           text,
    interruption_level  text,
    relevance_score     double precision,
    sound               text DEFAULT 'default',
    quiet_hours         boolean NOT NULL DEFAULT true,
    frequency_capped    boolean NOT NULL DEFAULT true,
    failure_reason      text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    started_at          timestamptz,
    completed_at        timestamptz,
    CONSTRAINT "campaign kind must be poster, flash_sale or feedback"
        CHECK (kind IN ('poster', 'flash_sale', 'feedback')),
    CONSTRAINT "campaign status must be draft, scheduled, running, paused, …"
        CHECK (status IN ('draft', 'scheduled', 'running', 'paused', 'completed', 'cancelled', 'failed')),
    CONSTRAINT "campaign priority must be 10 (immediate) or 5 (low urgency)"
        CHECK (priority IN (5, 10)),
    CONSTRAINT "campaign collapse_id must be at most 64 bytes"
        CHECK (collapse_id IS NULL OR octet_length(collapse_id) BETWEEN 1 AND 64),
    CONSTRAINT "interruption_level: passive/active/time-sensitive/critical"
        CHECK (interruption_level IS NULL OR interruption_level IN ('passive', 'active', 'time-sensitive', 'critical')),
    CONSTRAINT "campaign relevance_score must be between 0 and 1"
        CHECK (relevance_score IS NULL OR relevance_score BETWEEN 0 AND 1),
    CONSTRAINT "campaign media_type must be image, gif, audio or video"
        CHECK (media_type IS NULL OR media_type IN ('image', 'gif', 'audio', 'video')),
    CONSTRAINT "campaign custom must be a JSON object"
        CHECK (jsonb_typeof(custom) = 'object'),
    CONSTRAINT "campaign sensitive must be a JSON object"
        CHECK (sensitive IS NULL OR jsonb_typeof(sensitive) = 'object'),
    CONSTRAINT "campaign expires_at must be after send_at"
        CHECK (expires_at IS NULL OR expires_at > send_at)
);
CREATE INDEX campaigns_due ON campaigns (send_at) WHERE status IN ('scheduled', 'running');

-- The rules a marketer can break, checked when a campaign is written, with
-- messages that say what to change. (Kind, status and the other single-column
-- rules are the named CHECK constraints above.)
CREATE FUNCTION herald_campaign_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    loc text;
    entry jsonb;
BEGIN
    IF NEW.kind NOT IN ('poster', 'flash_sale', 'feedback') THEN
        RAISE EXCEPTION 'campaign "%": unknown kind "%"; use poster, flash_sale or feedback', NEW.name, NEW.kind
            USING ERRCODE = 'check_violation';
    END IF;
    IF jsonb_typeof(NEW.content) IS DISTINCT FROM 'object' OR NOT NEW.content ? NEW.default_locale THEN
        RAISE EXCEPTION 'campaign "%": content needs an entry for its default locale "%"', NEW.name, NEW.default_locale
            USING ERRCODE = 'check_violation',
                  HINT = 'content is {"en": {"title": "…", "body": "…"}, …}; default_locale names the fallback.';
    END IF;
    FOR loc, entry IN SELECT key, value FROM jsonb_each(NEW.content) LOOP
        IF jsonb_typeof(entry) <> 'object'
           OR jsonb_typeof(entry -> 'title') IS DISTINCT FROM 'string'
           OR jsonb_typeof(entry -> 'body') IS DISTINCT FROM 'string'
           OR (entry ? 'subtitle' AND jsonb_typeof(entry -> 'subtitle') <> 'string') THEN
            RAISE EXCEPTION 'campaign "%": content for locale "%" needs a text "title" and "body" (and optionally "subtitle")', NEW.name, loc
                USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    IF NEW.kind = 'poster' AND NEW.media_url IS NULL THEN
        RAISE EXCEPTION 'campaign "%": a poster needs media_url (the image or GIF the service extension attaches)', NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.media_url IS NOT NULL AND NEW.media_url !~ '^https://' THEN
        RAISE EXCEPTION 'campaign "%": media_url must be an https:// URL', NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.kind = 'flash_sale' AND NEW.expires_at IS NULL THEN
        RAISE EXCEPTION 'campaign "%": a flash_sale needs expires_at (the end of the sale)', NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.kind IN ('flash_sale', 'feedback') AND NEW.category_id IS NULL THEN
        RAISE EXCEPTION 'campaign "%": a % needs category_id (the category whose actions the user taps)', NEW.name, NEW.kind
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.kind = 'feedback' AND NOT EXISTS (
        SELECT 1 FROM category_actions ca JOIN actions a ON a.id = ca.action_id
        WHERE ca.category_id = NEW.category_id AND a.kind = 'text_input') THEN
        RAISE EXCEPTION 'campaign "%": a feedback campaign needs a category with a text_input action; category "%" has none', NEW.name, NEW.category_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER campaigns_check BEFORE INSERT OR UPDATE OF kind, content, default_locale, media_url, expires_at, category_id
    ON campaigns FOR EACH ROW EXECUTE FUNCTION herald_campaign_check();

-- One row a batch run: its figures, filled in as it goes.
CREATE TABLE runs (
    id           bigserial PRIMARY KEY,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    host         text NOT NULL,
    pid          integer NOT NULL,
    dry_run      boolean NOT NULL DEFAULT false,
    status       text NOT NULL DEFAULT 'running',
    error        text,
    campaigns    integer NOT NULL DEFAULT 0,
    targeted     bigint NOT NULL DEFAULT 0,
    sent         bigint NOT NULL DEFAULT 0,
    invalid      bigint NOT NULL DEFAULT 0,
    failed       bigint NOT NULL DEFAULT 0,
    retried      bigint NOT NULL DEFAULT 0,
    skipped      bigint NOT NULL DEFAULT 0,
    expired      bigint NOT NULL DEFAULT 0,
    CONSTRAINT "run status must be running, succeeded or failed"
        CHECK (status IN ('running', 'succeeded', 'failed'))
);

-- The ledger: one row per campaign × device.
CREATE TABLE deliveries (
    id           bigserial PRIMARY KEY,
    campaign_id  bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    device_id    bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    status       text NOT NULL DEFAULT 'queued',
    not_before   timestamptz NOT NULL DEFAULT now(),
    apns_id      uuid,
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text,
    claimed_by   bigint REFERENCES runs (id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    sent_at      timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (campaign_id, device_id),
    CONSTRAINT "delivery status must be a known delivery status"
        CHECK (status IN ('queued', 'in_flight', 'sent', 'invalid', 'failed', 'expired', 'skipped', 'cancelled'))
);
CREATE INDEX deliveries_pending ON deliveries (campaign_id, id) WHERE status IN ('queued', 'in_flight');
CREATE INDEX deliveries_recent_sent ON deliveries (user_id, sent_at) WHERE status = 'sent';

CREATE TABLE replies (
    id            bigserial PRIMARY KEY,
    reply_id      uuid NOT NULL UNIQUE,
    delivery_id   bigint NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    campaign_id   bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    device_id     bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    user_id       bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    action        text NOT NULL,
    text          text,
    occurred_at   timestamptz NOT NULL,
    received_at   timestamptz NOT NULL DEFAULT now(),
    source        text NOT NULL DEFAULT 'api',
    CONSTRAINT "reply text is at most 2000 characters" CHECK (text IS NULL OR char_length(text) <= 2000),
    CONSTRAINT "reply source must be api or ingest" CHECK (source IN ('api', 'ingest'))
);
CREATE INDEX replies_campaign ON replies (campaign_id, action);
