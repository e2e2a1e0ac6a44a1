-- Herald schema: a campaign's open spans found without reading its settled
-- ones (DESIGN, "The ledger by ranges", Statements: the claim).
--
-- A claim's takeover search, herald_batch_left (a campaign's end) and
-- herald_close_batch (a cancel) look for the spans with rows above their
-- watermark. Through the primary key they read every span of the campaign,
-- settled or not: a claim's search grew with the spans before it, and a
-- campaign's claims with the square of its audience (ten thousand spans:
-- 1.5 ms a search). Only the spans still open are in this index: those
-- held now, and those a gone run left.
-- applied-if: SELECT to_regclass('public.delivery_spans_open') IS NOT NULL

CREATE INDEX delivery_spans_open ON delivery_spans (campaign_id, through) WHERE settled < through;
