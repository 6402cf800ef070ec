-- +goose Up
-- Burst protection (billing.FeedRate): what it keeps per feed, written by
-- the poll or push that records the feed's new posts, in the same UPDATE
-- as the rest of its state. rate_score is the weighted count of its posts
-- as of rate_at (its latest update; NULL before the first), rate_allowance
-- the charged posts it may still send as of rate_at, rate_since when its
-- history began.
-- items.burst marks a post that came in a burst: instant email of it is
-- free to a reader who pays for themselves.
-- outbox.free_reason says why a row with 0 credits is free (its ledger
-- line's reason, e.g. "burst: free"); '' for paid rows and notices.
ALTER TABLE feeds ADD COLUMN rate_score DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE feeds ADD COLUMN rate_allowance DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE feeds ADD COLUMN rate_at TIMESTAMPTZ;
ALTER TABLE feeds ADD COLUMN rate_since TIMESTAMPTZ;
ALTER TABLE items ADD COLUMN burst BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE outbox ADD COLUMN free_reason TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE outbox DROP COLUMN free_reason;
ALTER TABLE items DROP COLUMN burst;
ALTER TABLE feeds DROP COLUMN rate_since;
ALTER TABLE feeds DROP COLUMN rate_at;
ALTER TABLE feeds DROP COLUMN rate_allowance;
ALTER TABLE feeds DROP COLUMN rate_score;
