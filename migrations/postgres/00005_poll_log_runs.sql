-- +goose Up
-- poll_log keeps one line per run of identical polls instead of one per poll:
-- a 304 that follows a 304 (no error, no redirect) is counted, not logged,
-- unless the feed's newest line is a day old. feeds.log_seq counts every poll
-- and push recorded; poll_log.seq is the feed's log_seq at that line, so the
-- polls folded into a line are the gap to the next one (0 on lines written
-- before this migration: not known). logged_at is when the feed's newest
-- line was written.
ALTER TABLE feeds ADD COLUMN log_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE feeds ADD COLUMN logged_at TIMESTAMPTZ;
ALTER TABLE poll_log ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE poll_log DROP COLUMN seq;
ALTER TABLE feeds DROP COLUMN logged_at;
ALTER TABLE feeds DROP COLUMN log_seq;
