-- +goose Up
-- Same tables and columns as on Postgres (see its 00015).
ALTER TABLE inbound_events ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE inbound_events ADD COLUMN party TEXT NOT NULL DEFAULT '';
CREATE TABLE mail_events (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        DATETIME NOT NULL,
    domain    TEXT NOT NULL,
    source    TEXT NOT NULL,
    kind      TEXT NOT NULL,
    reason    TEXT NOT NULL DEFAULT '',
    party     TEXT NOT NULL DEFAULT '',
    severity  TEXT NOT NULL DEFAULT '',
    status    TEXT NOT NULL DEFAULT '',
    outbox_id INTEGER,
    detail    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX mail_events_at ON mail_events (at);
CREATE INDEX mail_events_domain ON mail_events (domain, at);

-- +goose Down
DROP TABLE mail_events;
ALTER TABLE inbound_events DROP COLUMN party;
ALTER TABLE inbound_events DROP COLUMN reason;
