-- Conversions (conversions): what users did that campaigns want to move, posted by an app's
-- backend or loaded by herald ingest-conversions, each stored once by its idempotency_key.
-- Statements of this file are run by Sources/Store/ConversionStore.swift.

-- name: store
-- Stores a batch of conversions in one statement, for the users known by external_id, each
-- idempotency_key once: the batch's first with that key, unless the key was stored before.
-- Answers for each conversion, in batch order, stored, duplicate or unknown_user. An amount
-- or a currency comes as empty text for none: the arrays bound hold no NULL.
WITH input AS (
    SELECT x.* FROM unnest(:users::text[], :events::text[],
                           :occurred_ats::timestamptz[], :amounts::text[],
                           :currencies::text[], :idempotency_keys::text[])
        WITH ORDINALITY AS x(external_id, event, occurred_at, amount, currency, idempotency_key, n)
), known AS (
    SELECT i.*, u.id AS user_id FROM input i JOIN users u ON u.external_id = i.external_id
), ins AS (
    INSERT INTO conversions (user_id, event, occurred_at, amount, currency, idempotency_key, source)
    SELECT DISTINCT ON (idempotency_key) user_id, event, occurred_at, nullif(amount, '')::numeric,
           nullif(currency, ''), idempotency_key, :source
    FROM known ORDER BY idempotency_key, n
    ON CONFLICT (idempotency_key) DO NOTHING
    RETURNING idempotency_key
)
SELECT i.n::int8,
       CASE WHEN NOT EXISTS (SELECT 1 FROM known k WHERE k.n = i.n) THEN 'unknown_user'
            WHEN EXISTS (SELECT 1 FROM ins WHERE ins.idempotency_key = i.idempotency_key)
                 AND i.n = (SELECT min(k.n) FROM known k WHERE k.idempotency_key = i.idempotency_key)
            THEN 'stored' ELSE 'duplicate' END
FROM input i ORDER BY i.n
