-- Entering a journey whose reentry is never or after (docs/DESIGN.md, contract 11) asks
-- whether the user was ever a member (herald_journey_enter), in the transaction that stores
-- a conversion or a reply: an index over every member by journey and user answers it, where
-- the index of active members could not and the check read the whole member table for each
-- user (166 ms a user at 1,100,000 members).
--
-- applied-if: SELECT to_regclass('public.journey_members_by_user') IS NOT NULL

CREATE INDEX journey_members_by_user ON journey_members (journey_id, user_id, entered_at);
COMMENT ON INDEX journey_members_by_user IS 'Whether a user was ever a member of a journey, and when they last entered: what herald_journey_enter asks for reentry never and after.';
