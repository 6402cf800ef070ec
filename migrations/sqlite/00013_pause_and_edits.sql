-- +goose Up
-- Same columns as on Postgres (see its 00013).
ALTER TABLE subscriptions ADD COLUMN paused_at DATETIME;
ALTER TABLE subscriptions ADD COLUMN paused_until DATETIME;
ALTER TABLE users ADD COLUMN paused_at DATETIME;
ALTER TABLE users ADD COLUMN paused_until DATETIME;
ALTER TABLE items ADD COLUMN content_hash TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE items DROP COLUMN content_hash;
ALTER TABLE users DROP COLUMN paused_until;
ALTER TABLE users DROP COLUMN paused_at;
ALTER TABLE subscriptions DROP COLUMN paused_until;
ALTER TABLE subscriptions DROP COLUMN paused_at;
