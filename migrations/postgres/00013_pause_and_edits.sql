-- +goose Up
-- Pause: paused_at is when the reader paused a subscription (or, on users,
-- the whole account); NULL is not paused. paused_until is when the pause
-- ends by itself; NULL with paused_at set means until resumed. A pause
-- whose paused_until has passed is over, whether or not the columns were
-- cleared yet.
-- items.content_hash is the fingerprint of the stored version of an item
-- (hex of the first 16 bytes of a sha256 over its title, content and
-- media): a poll that finds a known item with another fingerprint updates
-- it (an edited post). '' for items stored before it was recorded.
-- The partial indexes serve the mailer's sweep for pauses that ended.
ALTER TABLE subscriptions ADD COLUMN paused_at TIMESTAMPTZ;
ALTER TABLE subscriptions ADD COLUMN paused_until TIMESTAMPTZ;
ALTER TABLE users ADD COLUMN paused_at TIMESTAMPTZ;
ALTER TABLE users ADD COLUMN paused_until TIMESTAMPTZ;
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
