-- +goose Up
-- A subscription and a digest deliver to a channel (email by default, to the
-- person's address), with its target (a URL) and the channel's secret (a
-- webhook's signing secret, an access token); each outbox row carries the
-- channel it goes out by.
ALTER TABLE subscriptions ADD COLUMN channel TEXT NOT NULL DEFAULT 'email';
ALTER TABLE subscriptions ADD COLUMN target TEXT NOT NULL DEFAULT '';
ALTER TABLE subscriptions ADD COLUMN channel_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE digests ADD COLUMN channel TEXT NOT NULL DEFAULT 'email';
ALTER TABLE digests ADD COLUMN target TEXT NOT NULL DEFAULT '';
ALTER TABLE digests ADD COLUMN channel_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN channel TEXT NOT NULL DEFAULT 'email';

-- +goose Down
ALTER TABLE outbox DROP COLUMN channel;
ALTER TABLE digests DROP COLUMN channel_secret;
ALTER TABLE digests DROP COLUMN target;
ALTER TABLE digests DROP COLUMN channel;
ALTER TABLE subscriptions DROP COLUMN channel_secret;
ALTER TABLE subscriptions DROP COLUMN target;
ALTER TABLE subscriptions DROP COLUMN channel;
