-- +goose Up
-- Same table and column as on Postgres (see its 00016).
CREATE TABLE mail_destinations (
    domain       TEXT PRIMARY KEY,
    paused_until DATETIME NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    failures     INTEGER NOT NULL DEFAULT 0,
    updated_at   DATETIME NOT NULL
);
ALTER TABLE outbox ADD COLUMN blocked_since DATETIME;

-- +goose Down
ALTER TABLE outbox DROP COLUMN blocked_since;
DROP TABLE mail_destinations;
