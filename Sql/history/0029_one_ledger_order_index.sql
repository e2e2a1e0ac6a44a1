-- Herald schema: one index of ledger order on each campaign's partition, not two.
--
-- 0010 gave the ledger `deliveries_id (id)` and 0011 `deliveries_campaign
-- (campaign_id, id)`. On a campaign's own partition (0010: each campaign's
-- rows are a partition of their own) `campaign_id` is one value, so the two
-- indexes hold the same order, and a claim's window, the reply intake's
-- lookups and every statement that names a campaign read either one the
-- same way. Every audience row paid for both: measured on a 300,000-row
-- snapshot, the INSERT took 12% less time without the second (BENCHMARKS.md),
-- and at ten million devices it is 300 MB less index competing for shared
-- buffers. Only the DEFAULT partition (rows written before their campaign
-- had a partition) holds several campaigns: it keeps the ordered index of
-- its own.
-- (`herald migrate` adopts it when applied by hand with psql, by this test:)
-- applied-if: SELECT to_regclass('public.deliveries_default_campaign') IS NOT NULL

DROP INDEX deliveries_campaign;
CREATE INDEX deliveries_default_campaign ON deliveries_default (campaign_id, id);
