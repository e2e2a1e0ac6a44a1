-- Herald schema: herald serve's role stores conversions as
-- ConversionStore does: INSERT … ON CONFLICT (idempotency_key) DO NOTHING
-- RETURNING idempotency_key, which reads that column.
-- applied-if: SELECT has_column_privilege('herald_intake', 'public.conversions', 'idempotency_key', 'SELECT')

GRANT SELECT (idempotency_key) ON conversions TO herald_intake;
