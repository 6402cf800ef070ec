-- +goose Up
-- Same table and columns as on Postgres (see its 00014).
CREATE TABLE inbound_events (
    effect_key  TEXT PRIMARY KEY,
    outbox_id   INTEGER NOT NULL,
    user_id     INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    severity    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT '',
    received_at DATETIME NOT NULL
);
CREATE INDEX inbound_events_user ON inbound_events (user_id, received_at);
-- Complaints often name the email only by its Message-ID.
CREATE INDEX outbox_message_id ON outbox (message_id) WHERE message_id <> '';
ALTER TABLE users ADD COLUMN soft_bounces INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN last_bounce TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN last_bounce_at DATETIME;

-- +goose Down
DROP INDEX outbox_message_id;
ALTER TABLE users DROP COLUMN last_bounce_at;
ALTER TABLE users DROP COLUMN last_bounce;
ALTER TABLE users DROP COLUMN soft_bounces;
DROP TABLE inbound_events;
