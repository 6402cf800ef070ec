-- +goose Up
-- Same columns as on Postgres (see its 00005).
ALTER TABLE feeds ADD COLUMN log_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE feeds ADD COLUMN logged_at DATETIME;
ALTER TABLE poll_log ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE poll_log DROP COLUMN seq;
ALTER TABLE feeds DROP COLUMN logged_at;
ALTER TABLE feeds DROP COLUMN log_seq;
