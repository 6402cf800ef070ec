-- +goose Up
-- Cheaper writes on the poller's hot path (every poll of every feed).
--
-- A feed claim writes only lease_owner and lease_until, which no index
-- covers: with room left on each page Postgres makes it a HOT update (no new
-- index entries, no dead entries for the due index to skip). The poll's own
-- state write moves next_poll_at and stays a normal update.
ALTER TABLE feeds SET (fillfactor = 70);
-- poll_log is an append-only log pruned after 7 days, written once per poll.
-- Its foreign key cost a lookup and a row lock on the feed per line; feeds
-- are never deleted (they end as gone, blacklisted or merged), so it guarded
-- nothing.
ALTER TABLE poll_log DROP CONSTRAINT poll_log_feed_id_fkey;

-- +goose Down
ALTER TABLE poll_log ADD CONSTRAINT poll_log_feed_id_fkey FOREIGN KEY (feed_id) REFERENCES feeds (id) ON DELETE CASCADE;
ALTER TABLE feeds RESET (fillfactor);
