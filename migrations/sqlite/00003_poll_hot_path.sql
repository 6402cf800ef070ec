-- +goose Up
-- The Postgres migration of this version tunes the poller's hot path
-- (fillfactor on feeds, no foreign key on poll_log). SQLite has no
-- fillfactor, and dropping a foreign key there means rebuilding the table,
-- for no gain with one writer; kept so both dialects share version numbers.
SELECT 1;

-- +goose Down
SELECT 1;
