-- The journeys scripts/bench-journeys measures (docs/DESIGN.md, contract 11), written as a
-- marketer writes them, as drafts: the script sets each one running when its turn comes.
-- Run with psql -v name=… -v segment=<id> -v half=<id> -v shape=flow|listen -v reentry=never|always.
--
-- flow: entered by its segment; two waits, a branch on a segment (half of the users each
-- way, to two more waits), a send (the same poster as the plain poster it is compared
-- with), then a wait for a reply whose timeout leads to a second send and out:
--
--   w0 (wait 1 h) → w1 (wait 1 h) → b (branch: in segment half → w2a, else → w2b)
--   w2a, w2b (wait 1 h) → ask (send) → listen (wait_for a reply to ask, 2 days)
--   listen: reply → out; timeout → again (send) → out
--
-- listen: entered by its segment; a send (a feedback prompt with a text input), then a
-- wait for a reply to it:
--
--   ask (send) → listen (wait_for a reply to ask, 2 days): reply → out; timeout → out
\set ON_ERROR_STOP on
\set content '{"en": {"title": "Autumn is here", "body": "Our new collection just landed."}, "fr": {"title": "L''automne est là", "body": "Notre nouvelle collection vient d''arriver."}, "zh-Hans": {"title": "秋天来了", "body": "新品已上架。"}}'
\set feedback '{"en": {"title": "How did we do?", "body": "Tell us about your last order."}, "fr": {"title": "Votre avis compte", "body": "Parlez-nous de votre dernière commande."}, "zh-Hans": {"title": "您的意见", "body": "说说您最近的订单。"}}'

SELECT :'shape' = 'flow' AS flow \gset
\if :flow
INSERT INTO journeys (name, first_step, entry, entry_segment_id, reentry, status)
VALUES (:'name', 'w0', 'segment', :segment, :'reentry', 'draft') RETURNING id AS journey \gset
INSERT INTO campaigns (name, kind, status, content, media_url, media_type, category_id, quiet_hours, frequency_capped, journey_id)
VALUES (:'name' || ' ask', 'poster', 'scheduled', :'content', 'https://cdn.example.com/p/autumn.gif', 'gif', 'poster.v1', false, false, :journey),
       (:'name' || ' again', 'poster', 'scheduled', :'content', 'https://cdn.example.com/p/autumn.gif', 'gif', 'poster.v1', false, false, :journey);
SELECT (SELECT id FROM campaigns WHERE name = :'name' || ' ask') AS ask, (SELECT id FROM campaigns WHERE name = :'name' || ' again') AS again \gset
INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id, wait_for, timeout, of_step) VALUES
  (:journey, 1, 'w0', 'wait', NULL, '1 hour', NULL, NULL),
  (:journey, 1, 'w1', 'wait', NULL, '1 hour', NULL, NULL),
  (:journey, 1, 'b', 'branch', NULL, NULL, NULL, NULL),
  (:journey, 1, 'w2a', 'wait', NULL, '1 hour', NULL, NULL),
  (:journey, 1, 'w2b', 'wait', NULL, '1 hour', NULL, NULL),
  (:journey, 1, 'ask', 'send', :ask, NULL, NULL, NULL),
  (:journey, 1, 'listen', 'wait_for', NULL, NULL, '2 days', 'ask'),
  (:journey, 1, 'again', 'send', :again, NULL, NULL, NULL);
INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES
  (:journey, 1, 'w0', 1, 'next', '{}', 'w1'),
  (:journey, 1, 'w1', 1, 'next', '{}', 'b'),
  (:journey, 1, 'b', 1, 'segment', jsonb_build_object('segment_id', :half, 'in', true), 'w2a'),
  (:journey, 1, 'b', 2, 'else', '{}', 'w2b'),
  (:journey, 1, 'w2a', 1, 'next', '{}', 'ask'),
  (:journey, 1, 'w2b', 1, 'next', '{}', 'ask'),
  (:journey, 1, 'ask', 1, 'next', '{}', 'listen'),
  (:journey, 1, 'listen', 1, 'reply', '{}', NULL),
  (:journey, 1, 'listen', 2, 'timeout', '{}', 'again'),
  (:journey, 1, 'again', 1, 'next', '{}', NULL);
\else
INSERT INTO journeys (name, first_step, entry, entry_segment_id, reentry, status)
VALUES (:'name', 'ask', 'segment', :segment, :'reentry', 'draft') RETURNING id AS journey \gset
INSERT INTO campaigns (name, kind, status, content, category_id, quiet_hours, frequency_capped, journey_id)
VALUES (:'name' || ' ask', 'feedback', 'scheduled', :'feedback', 'feedback.v1', false, false, :journey)
RETURNING id AS ask \gset
INSERT INTO journey_steps (journey_id, version, step, kind, campaign_id, timeout, of_step) VALUES
  (:journey, 1, 'ask', 'send', :ask, NULL, NULL),
  (:journey, 1, 'listen', 'wait_for', NULL, '2 days', 'ask');
INSERT INTO journey_edges (journey_id, version, from_step, position, kind, rule, to_step) VALUES
  (:journey, 1, 'ask', 1, 'next', '{}', 'listen'),
  (:journey, 1, 'listen', 1, 'reply', '{}', NULL),
  (:journey, 1, 'listen', 2, 'timeout', '{}', NULL);
\endif
-- Refused now, naming the step, if it could not run.
SELECT count(*) = 0 AS fine FROM herald_journey_problems(:journey, 1) \gset
\if :fine
\else
SELECT * FROM herald_journey_problems(:journey, 1);
DO $$ BEGIN RAISE EXCEPTION 'the journey cannot run (its problems above)'; END $$;
\endif
SELECT :journey;
