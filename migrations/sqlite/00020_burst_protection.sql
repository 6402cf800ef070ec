-- +goose Up
-- Same columns as on Postgres (see its 00020).
ALTER TABLE feeds ADD COLUMN rate_score REAL NOT NULL DEFAULT 0;
ALTER TABLE feeds ADD COLUMN rate_allowance REAL NOT NULL DEFAULT 0;
ALTER TABLE feeds ADD COLUMN rate_at DATETIME;
ALTER TABLE feeds ADD COLUMN rate_since DATETIME;
ALTER TABLE items ADD COLUMN burst BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE outbox ADD COLUMN free_reason TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE outbox DROP COLUMN free_reason;
ALTER TABLE items DROP COLUMN burst;
ALTER TABLE feeds DROP COLUMN rate_since;
ALTER TABLE feeds DROP COLUMN rate_at;
ALTER TABLE feeds DROP COLUMN rate_allowance;
ALTER TABLE feeds DROP COLUMN rate_score;
