-- Herald schema, the app's side: devices that register themselves
-- (PUT /v1/devices/{token}), localized action titles, the notification-config
-- documents served to apps, config refresh pushes in the ledger, and campaign
-- text given as keys of the app's own Localizable.strings.
--
-- Applied by `herald migrate`, or: psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -1 -f Sql/0005_app.sql
-- (`herald migrate` adopts it when applied by hand with psql, by this test:)
-- applied-if: SELECT to_regclass('public.config_documents') IS NOT NULL

-- A locale tag as the app reports it (BCP 47: en, fr-CA, zh-Hans, zh-Hant-TW).
CREATE FUNCTION herald_is_locale(tag text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT tag ~ '^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$'
$$;

-- Devices: what the app registers besides its token.
--   locale        the device's own language; it wins over the user's for text
--   config_etag   the notification-config ETag the app last registered
--   registered_at when the app's backend issued the last registration
ALTER TABLE devices
    ADD COLUMN locale             text,
    ADD COLUMN config_etag        text,
    ADD COLUMN config_reported_at timestamptz,
    ADD COLUMN registered_at      timestamptz,
    ADD CONSTRAINT "device locale must be a BCP 47 tag such as en, fr or zh-Hans"
        CHECK (locale IS NULL OR herald_is_locale(locale)),
    ADD CONSTRAINT "device config_etag must be 1 to 128 bytes"
        CHECK (config_etag IS NULL OR octet_length(config_etag) BETWEEN 1 AND 128);

-- Actions: the title (and text-input labels) per locale. The plain columns
-- are the text in the action's default_locale; `localized` holds the other
-- locales: {"fr": {"title": "Réserver"},
--           "zh-Hans": {"title": "告诉我们", "text_button_title": "发送", "text_placeholder": "你的想法"}}
-- A device gets the entry of its locale with the same fallback as campaign
-- text: the exact tag, the tag with trailing parts dropped, any entry of the
-- same language, then the default.
ALTER TABLE actions
    ADD COLUMN default_locale text NOT NULL DEFAULT 'en',
    ADD COLUMN localized      jsonb NOT NULL DEFAULT '{}',
    ADD CONSTRAINT "action default_locale must be a BCP 47 tag such as en"
        CHECK (herald_is_locale(default_locale));

CREATE FUNCTION herald_action_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    loc text;
    entry jsonb;
    field text;
BEGIN
    IF jsonb_typeof(NEW.localized) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'action "%": localized must be a JSON object of locale → {"title": …}', NEW.id
            USING ERRCODE = 'check_violation';
    END IF;
    FOR loc, entry IN SELECT key, value FROM jsonb_each(NEW.localized) LOOP
        IF NOT herald_is_locale(loc) THEN
            RAISE EXCEPTION 'action "%": localized key "%" is not a locale tag such as fr or zh-Hans', NEW.id, loc
                USING ERRCODE = 'check_violation';
        END IF;
        IF jsonb_typeof(entry) IS DISTINCT FROM 'object' OR jsonb_typeof(entry -> 'title') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'action "%": localized entry "%" needs a text "title"', NEW.id, loc
                USING ERRCODE = 'check_violation';
        END IF;
        FOR field IN SELECT jsonb_object_keys(entry) LOOP
            IF field NOT IN ('title', 'text_button_title', 'text_placeholder') THEN
                RAISE EXCEPTION 'action "%": localized entry "%" has "%"; use title, text_button_title or text_placeholder', NEW.id, loc, field
                    USING ERRCODE = 'check_violation';
            END IF;
            IF jsonb_typeof(entry -> field) <> 'string' THEN
                RAISE EXCEPTION 'action "%": localized entry "%": "%" must be text', NEW.id, loc, field
                    USING ERRCODE = 'check_violation';
            END IF;
        END LOOP;
        IF NEW.kind <> 'text_input' AND (entry ? 'text_button_title' OR entry ? 'text_placeholder') THEN
            RAISE EXCEPTION 'action "%": localized entry "%": only text_input actions have text_button_title/text_placeholder', NEW.id, loc
                USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;
    RETURN NEW;
END $$;
CREATE TRIGGER actions_check BEFORE INSERT OR UPDATE ON actions
    FOR EACH ROW EXECUTE FUNCTION herald_action_check();

-- Every notification-config document Herald has served (or announced in a
-- refresh push), by ETag, with the definition hash of each category in it:
-- a device whose reported ETag has the current hash of a campaign's category
-- already shows that category's buttons.
CREATE TABLE config_documents (
    etag           text PRIMARY KEY,
    locale         text NOT NULL,
    categories     jsonb NOT NULL,
    first_seen_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "config_documents categories must be a JSON object"
        CHECK (jsonb_typeof(categories) = 'object')
);

-- The ledger gets a second kind of delivery: the background push that tells a
-- device to fetch the notification config before a campaign uses a category
-- it does not have yet. It belongs to no campaign (`prompted_by` says which
-- campaign needed it) and goes once per device and config version.
ALTER TABLE deliveries
    ADD COLUMN kind        text NOT NULL DEFAULT 'campaign',
    ADD COLUMN config_etag text,
    ADD COLUMN prompted_by bigint REFERENCES campaigns (id) ON DELETE SET NULL,
    ALTER COLUMN campaign_id DROP NOT NULL,
    ADD CONSTRAINT "delivery kind must be campaign or config_refresh"
        CHECK (kind IN ('campaign', 'config_refresh')),
    ADD CONSTRAINT "campaign deliveries name a campaign, config refreshes an ETag"
        CHECK ((kind = 'campaign' AND campaign_id IS NOT NULL AND config_etag IS NULL)
            OR (kind = 'config_refresh' AND campaign_id IS NULL AND config_etag IS NOT NULL));
CREATE UNIQUE INDEX deliveries_config_refresh_once ON deliveries (device_id, config_etag)
    WHERE kind = 'config_refresh';
CREATE INDEX deliveries_config_refresh_pending ON deliveries (id)
    WHERE kind = 'config_refresh' AND status IN ('queued', 'in_flight');

-- For analysts: the config refresh pushes and what became of them.
CREATE VIEW analyst.config_refreshes AS
SELECT d.prompted_by AS campaign_id, d.config_etag, d.status, count(*) AS devices,
       min(d.sent_at) AS first_sent_at, max(d.sent_at) AS last_sent_at
FROM deliveries d
WHERE d.kind = 'config_refresh'
GROUP BY d.prompted_by, d.config_etag, d.status;
GRANT SELECT ON analyst.config_refreshes TO herald_analyst;

-- Campaign text: each of title, subtitle and body is either literal text or a
-- key of the app's Localizable.strings ("title-loc-key", "subtitle-loc-key",
-- "loc-key") with optional arguments ("title-loc-args", "subtitle-loc-args",
-- "loc-args": lists of text).
CREATE OR REPLACE FUNCTION herald_campaign_content_problem(entry jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    field text;
    part text;
    parts text[] := ARRAY['title', 'subtitle', 'body'];
    keys text[] := ARRAY['title-loc-key', 'subtitle-loc-key', 'loc-key'];
    args text[] := ARRAY['title-loc-args', 'subtitle-loc-args', 'loc-args'];
    i integer;
BEGIN
    IF jsonb_typeof(entry) IS DISTINCT FROM 'object' THEN
        RETURN 'must be an object with "title" and "body" (or "title-loc-key" and "loc-key")';
    END IF;
    FOR field IN SELECT jsonb_object_keys(entry) LOOP
        IF NOT field = ANY (parts || keys || args) THEN
            RETURN format('has "%s"; use title, subtitle, body, title-loc-key, subtitle-loc-key, loc-key, title-loc-args, subtitle-loc-args or loc-args', field);
        END IF;
    END LOOP;
    FOR i IN 1..3 LOOP
        part := parts[i];
        IF entry ? part AND jsonb_typeof(entry -> part) <> 'string' THEN
            RETURN format('"%s" must be text', part);
        END IF;
        IF entry ? keys[i] AND (jsonb_typeof(entry -> keys[i]) <> 'string' OR entry ->> keys[i] = '') THEN
            RETURN format('"%s" must be a non-empty text (a key of the app''s Localizable.strings)', keys[i]);
        END IF;
        IF entry ? part AND entry ? keys[i] THEN
            RETURN format('give "%s" or "%s", not both', part, keys[i]);
        END IF;
        IF entry ? args[i] THEN
            IF NOT entry ? keys[i] THEN
                RETURN format('"%s" needs "%s"', args[i], keys[i]);
            END IF;
            IF jsonb_typeof(entry -> args[i]) <> 'array'
               OR EXISTS (SELECT 1 FROM jsonb_array_elements(entry -> args[i]) a WHERE jsonb_typeof(a) <> 'string') THEN
                RETURN format('"%s" must be a list of texts', args[i]);
            END IF;
        END IF;
    END LOOP;
    IF NOT (entry ? 'title' OR entry ? 'title-loc-key') OR NOT (entry ? 'body' OR entry ? 'loc-key') THEN
        RETURN 'needs a text "title" and "body" (or "title-loc-key" and "loc-key")';
    END IF;
    RETURN NULL;
END $$;

-- The campaign rules of 0001, with the content rule above.
CREATE OR REPLACE FUNCTION herald_campaign_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    loc text;
    entry jsonb;
    problem text;
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
        problem := herald_campaign_content_problem(entry);
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION 'campaign "%": content for locale "%" %', NEW.name, loc, problem
                USING ERRCODE = 'check_violation',
                      HINT = 'An entry is {"title": "…", "subtitle": "…", "body": "…"}, or keys of the app''s strings: {"title-loc-key": "SALE_TITLE", "loc-key": "SALE_BODY", "loc-args": ["2"]}.';
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
