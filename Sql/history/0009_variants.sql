-- Herald schema: A/B variants. A campaign may carry 2 to 4 variants of its
-- text (and media), each with a share of the audience in whole percent. Every
-- device of the audience is assigned one variant at the snapshot, by a
-- documented hash of the campaign and the device (the same device gets the
-- same variant on every run and every PostgreSQL version), and its delivery
-- records it. A campaign without variant rows is sent exactly as before.
-- (`herald migrate` adopts it when applied by hand with psql, by this test:)
-- applied-if: SELECT to_regclass('public.campaign_variants') IS NOT NULL

-- content is shaped like campaigns.content ({"en": {"title": …, "body": …}, …})
-- and replaces the campaign's text in the locales it gives; the campaign's
-- other locales keep its own text. media_url (with media_type) replaces the
-- campaign's media. Variants are ordered by name (byte order); the first is
-- the baseline the analyst views compare the others with.
CREATE TABLE campaign_variants (
    campaign_id  bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    name         text NOT NULL,
    share        integer NOT NULL,
    content      jsonb NOT NULL,
    media_url    text,
    media_type   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, name),
    CONSTRAINT "variant name is 1 to 40 characters, no control characters"
        CHECK (char_length(name) BETWEEN 1 AND 40 AND name !~ '[[:cntrl:]]' AND name = btrim(name)),
    CONSTRAINT "variant share is a whole percent from 1 to 99"
        CHECK (share BETWEEN 1 AND 99),
    CONSTRAINT "variant media_type must be image, gif, audio or video"
        CHECK (media_type IS NULL OR media_type IN ('image', 'gif', 'audio', 'video')),
    CONSTRAINT "variant media_type goes with its media_url"
        CHECK (media_type IS NULL OR media_url IS NOT NULL)
);

-- The rules one variant row can break, checked when it is written, with
-- messages that name the campaign and the variant. The rules of the whole
-- set (2 to 4 variants, shares adding up to 100) can only hold once the
-- marketer has written every row: a run checks them and fails only that
-- campaign, with the reason, when they do not hold.
CREATE FUNCTION herald_campaign_variant_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    c record;
    loc text;
    entry jsonb;
    problem text;
    others integer;
BEGIN
    SELECT id, name, snapshot_at INTO c FROM campaigns WHERE id = NEW.campaign_id;
    IF c.snapshot_at IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.name IS DISTINCT FROM OLD.name
                                      OR NEW.share IS DISTINCT FROM OLD.share
                                      OR NEW.campaign_id IS DISTINCT FROM OLD.campaign_id) THEN
        RAISE EXCEPTION 'campaign "%": its audience was assigned to its variants at %; variants cannot be added, renamed or reshared now', c.name, c.snapshot_at
            USING ERRCODE = 'check_violation',
                  HINT = 'A variant''s text and media may still change. To try other variants, insert a new campaign.';
    END IF;
    IF jsonb_typeof(NEW.content) IS DISTINCT FROM 'object' OR NEW.content = '{}' THEN
        RAISE EXCEPTION 'campaign "%": variant "%": content must be a JSON object of locale → text, like the campaign''s', c.name, NEW.name
            USING ERRCODE = 'check_violation',
                  HINT = 'content is {"en": {"title": "…", "body": "…"}, …}; locales it leaves out keep the campaign''s text.';
    END IF;
    FOR loc, entry IN SELECT key, value FROM jsonb_each(NEW.content) LOOP
        IF NOT herald_is_locale(loc) THEN
            RAISE EXCEPTION 'campaign "%": variant "%": content key "%" is not a locale tag such as en or zh-Hans', c.name, NEW.name, loc
                USING ERRCODE = 'check_violation';
        END IF;
        problem := herald_campaign_content_problem(entry);
        IF problem IS NOT NULL THEN
            RAISE EXCEPTION 'campaign "%": variant "%": content for locale "%" %', c.name, NEW.name, loc, problem
                USING ERRCODE = 'check_violation',
                      HINT = 'An entry is {"title": "…", "subtitle": "…", "body": "…"}, or keys of the app''s strings: {"title-loc-key": "SALE_TITLE", "loc-key": "SALE_BODY"}.';
        END IF;
    END LOOP;
    IF NEW.media_url IS NOT NULL AND NEW.media_url !~ '^https://' THEN
        RAISE EXCEPTION 'campaign "%": variant "%": media_url must be an https:// URL', c.name, NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    SELECT count(*) INTO others FROM campaign_variants
    WHERE campaign_id = NEW.campaign_id AND (TG_OP = 'INSERT' OR name <> OLD.name);
    IF others >= 4 THEN
        RAISE EXCEPTION 'campaign "%": variant "%" would be its 5th; a campaign has at most 4 variants', c.name, NEW.name
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER campaign_variants_check BEFORE INSERT OR UPDATE ON campaign_variants
    FOR EACH ROW EXECUTE FUNCTION herald_campaign_variant_check();

-- Once the audience is assigned, the variants it was assigned to stay.
CREATE FUNCTION herald_campaign_variant_keep() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    SELECT name, snapshot_at INTO c FROM campaigns WHERE id = OLD.campaign_id;
    IF c.snapshot_at IS NOT NULL THEN
        RAISE EXCEPTION 'campaign "%": its audience was assigned to its variants at %; variant "%" cannot be deleted now', c.name, c.snapshot_at, OLD.name
            USING ERRCODE = 'restrict_violation',
                  HINT = 'Pause or cancel the campaign instead (UPDATE campaigns SET status = ''paused'' …).';
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER campaign_variants_keep BEFORE DELETE ON campaign_variants
    FOR EACH ROW EXECUTE FUNCTION herald_campaign_variant_keep();

-- Which of 100 buckets a device falls into for a campaign: the first 32 bits
-- of md5('<campaign id>:<device id>') (RFC 1321, the same on every
-- PostgreSQL version and in any language) read as an unsigned big-endian
-- number u, scaled to floor(u * 100 / 2^32), 0 to 99. With the variants in
-- name order and their shares laid end to end from 0, a device gets the
-- variant whose range holds its bucket: shares 50/50 give buckets 0–49 to the
-- first, 50–99 to the second.
CREATE FUNCTION herald_variant_bucket(campaign_id bigint, device_id bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (((('x' || left(md5(campaign_id::text || ':' || device_id::text), 8))::bit(32)::bigint) * 100) >> 32)::integer
$$;

-- The ledger records each delivery's variant (NULL: the campaign has none).
ALTER TABLE deliveries ADD COLUMN variant text;

-- Two-sided p-value of a standard normal z: P(|Z| >= |z|) = erfc(|z| / √2).
-- PostgreSQL has no erfc on every supported version, so this is Abramowitz
-- and Stegun's 7.1.26 (Handbook of Mathematical Functions, 1964):
-- erfc(x) ≈ t(a1 + t(a2 + t(a3 + t(a4 + t a5)))) e^(−x²), t = 1 / (1 + p x),
-- absolute error at most 1.5e-7 for any x ≥ 0. Beyond |z| = 37 the p-value
-- is below 1e-298 and is returned as 0 (exp() would underflow, an error in
-- PostgreSQL).
CREATE FUNCTION herald_two_sided_p(z double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN abs(z) > 37 THEN 0.0::float8
           ELSE least(1.0, t * (0.254829592 + t * (-0.284496736 + t * (1.421413741
                    + t * (-1.453152027 + t * 1.061405429)))) * exp(-x * x)) END
    FROM (SELECT abs(z) / sqrt(2.0) AS x) AS a,
         LATERAL (SELECT 1.0 / (1.0 + 0.3275911 * a.x) AS t) AS b
$$;

-- For analysts: per campaign and variant, what was sent and how users
-- answered, counted like analyst.campaign_funnel (campaign deliveries only;
-- `opened` are taps on the notification itself, the response rate is
-- devices that answered at all over devices sent), and each variant's
-- response rate against the baseline (the first variant by name): the
-- pooled two-proportion z statistic and its two-sided p-value. z and p are
-- NULL for the baseline and while either side has nothing sent or every
-- device answered alike.
CREATE VIEW analyst.variant_comparison AS
WITH v AS (
    SELECT cv.campaign_id, cv.name AS variant, cv.share, cv.media_url,
           row_number() OVER (PARTITION BY cv.campaign_id ORDER BY cv.name COLLATE "C") AS position,
           count(*) OVER (PARTITION BY cv.campaign_id) AS variants
    FROM campaign_variants cv
), d AS (
    SELECT campaign_id, variant,
           count(*)                                        AS targeted,
           count(*) FILTER (WHERE status = 'sent')         AS sent
    FROM deliveries WHERE kind = 'campaign' AND variant IS NOT NULL
    GROUP BY campaign_id, variant
), r AS (
    SELECT dl.campaign_id, dl.variant,
           count(*)                      AS replies,
           count(DISTINCT r.delivery_id) AS responding_devices,
           count(*) FILTER (WHERE r.action = 'com.apple.UNNotificationDefaultActionIdentifier') AS opened,
           count(*) FILTER (WHERE r.action = 'com.apple.UNNotificationDismissActionIdentifier') AS dismissed,
           count(*) FILTER (WHERE r.text IS NOT NULL) AS typed_answers
    FROM replies r JOIN deliveries dl ON dl.id = r.delivery_id AND dl.kind = 'campaign' AND dl.variant IS NOT NULL
    GROUP BY dl.campaign_id, dl.variant
), f AS (
    SELECT v.campaign_id, c.name AS campaign, v.variant, v.position, v.variants, v.share,
           coalesce(d.targeted, 0) AS targeted, coalesce(d.sent, 0) AS sent,
           coalesce(r.replies, 0) AS replies, coalesce(r.responding_devices, 0) AS responding_devices,
           coalesce(r.opened, 0) AS opened, coalesce(r.dismissed, 0) AS dismissed,
           coalesce(r.typed_answers, 0) AS typed_answers
    FROM v
    JOIN campaigns c ON c.id = v.campaign_id
    LEFT JOIN d ON d.campaign_id = v.campaign_id AND d.variant = v.variant
    LEFT JOIN r ON r.campaign_id = v.campaign_id AND r.variant = v.variant
), cmp AS (
    SELECT f.*, b.variant AS baseline,
           CASE WHEN f.position > 1 AND f.sent > 0 AND b.sent > 0
                     AND (f.responding_devices + b.responding_devices) > 0
                     AND (f.responding_devices + b.responding_devices) < (f.sent + b.sent)
           THEN ((f.responding_devices::float8 / f.sent) - (b.responding_devices::float8 / b.sent))
                / sqrt(((f.responding_devices + b.responding_devices)::float8 / (f.sent + b.sent))
                       * (1 - (f.responding_devices + b.responding_devices)::float8 / (f.sent + b.sent))
                       * (1.0 / f.sent + 1.0 / b.sent))
           END AS z
    FROM f JOIN f AS b ON b.campaign_id = f.campaign_id AND b.position = 1
)
SELECT campaign_id, campaign, variant, position, variants, share AS share_pct,
       targeted,
       round(100.0 * targeted / nullif(sum(targeted) OVER (PARTITION BY campaign_id), 0), 1) AS targeted_pct,
       sent, replies, responding_devices, opened, dismissed, typed_answers,
       round(100.0 * responding_devices / nullif(sent, 0), 1) AS response_rate_pct,
       baseline, z, herald_two_sided_p(z) AS p_value
FROM cmp;

-- Per campaign, variant and action: which buttons the users of each variant pressed.
CREATE VIEW analyst.variant_actions AS
SELECT r.campaign_id, c.name AS campaign, dl.variant, r.action,
       CASE r.action
           WHEN 'com.apple.UNNotificationDefaultActionIdentifier' THEN '(opened)'
           WHEN 'com.apple.UNNotificationDismissActionIdentifier' THEN '(dismissed)'
           ELSE a.title
       END AS action_title,
       count(*) AS replies,
       round(100.0 * count(*) / sum(count(*)) OVER (PARTITION BY r.campaign_id, dl.variant), 1) AS share_pct
FROM replies r
JOIN deliveries dl ON dl.id = r.delivery_id AND dl.kind = 'campaign' AND dl.variant IS NOT NULL
JOIN campaigns c ON c.id = r.campaign_id
LEFT JOIN actions a ON a.id = r.action
GROUP BY r.campaign_id, c.name, dl.variant, r.action, a.title;

GRANT SELECT ON analyst.variant_comparison, analyst.variant_actions TO herald_analyst;

-- The batch run reads a campaign's variants; nobody else needs them (the
-- intake never reads campaign text).
GRANT SELECT ON campaign_variants TO herald_job;
