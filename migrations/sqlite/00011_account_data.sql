-- +goose Up
-- Same columns as on Postgres (see its 00011).
ALTER TABLE subscriptions ADD COLUMN confirmed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN deleted_at DATETIME;

-- +goose Down
ALTER TABLE users DROP COLUMN deleted_at;
ALTER TABLE subscriptions DROP COLUMN confirmed_by;
