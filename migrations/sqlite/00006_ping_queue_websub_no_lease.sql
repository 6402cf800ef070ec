-- +goose Up
-- Same columns as on Postgres (see its 00006).
ALTER TABLE feeds ADD COLUMN ping_queued_at DATETIME;
ALTER TABLE feeds ADD COLUMN websub_no_lease BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE feeds DROP COLUMN websub_no_lease;
ALTER TABLE feeds DROP COLUMN ping_queued_at;
