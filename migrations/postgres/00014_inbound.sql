-- +goose Up
-- What came back about the mail feedmail sent (bounces, complaints,
-- unsubscribes by email), one row per effect: effect_key names the email
-- and what happened to it ("hard:<outbox id>", "soft:<outbox id>",
-- "complaint:<outbox id>", "unsubscribe:<outbox id>"), so the same report
-- twice, or two reports of the same failure, count once.
-- users.soft_bounces counts temporary failures reported after sending
-- (shown, never stopping delivery); last_bounce says what the latest
-- bounce of either kind was, for the account page and admin commands.
CREATE TABLE inbound_events (
    effect_key  TEXT PRIMARY KEY,
    outbox_id   BIGINT NOT NULL,
    user_id     BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    severity    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT '',
    received_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX inbound_events_user ON inbound_events (user_id, received_at);
-- Complaints often name the email only by its Message-ID.
CREATE INDEX outbox_message_id ON outbox (message_id) WHERE message_id <> '';
ALTER TABLE users ADD COLUMN soft_bounces INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN last_bounce TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN last_bounce_at TIMESTAMPTZ;

-- +goose Down
DROP INDEX outbox_message_id;
ALTER TABLE users DROP COLUMN last_bounce_at;
ALTER TABLE users DROP COLUMN last_bounce;
ALTER TABLE users DROP COLUMN soft_bounces;
DROP TABLE inbound_events;
