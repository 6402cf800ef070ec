-- +goose Up
-- Same columns as on Postgres (see its 00013).
ALTER TABLE subscriptions ADD COLUMN paused_at DATETIME;
ALTER TABLE subscriptions ADD COLUMN paused_until DATETIME;
ALTER TABLE users ADD COLUMN paused_at DATETIME;
ALTER TABLE users ADD COLUMN paused_until DATETIME;
ALTER TABLE items ADD COLUMN content_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX subscriptions_paused_until ON subscriptions (paused_until) WHERE paused_at IS NOT NULL;
CREATE INDEX users_paused_until ON users (paused_until) WHERE paused_at IS NOT NULL;

-- +goose Down
DROP INDEX users_paused_until;
DROP INDEX subscriptions_paused_until;
ALTER TABLE items DROP COLUMN content_hash;
ALTER TABLE users DROP COLUMN paused_until;
ALTER TABLE users DROP COLUMN paused_at;
ALTER TABLE subscriptions DROP COLUMN paused_until;
ALTER TABLE subscriptions DROP COLUMN paused_at;
