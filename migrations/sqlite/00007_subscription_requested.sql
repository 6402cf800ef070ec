-- +goose Up
-- Same column as on Postgres (see its 00007).
ALTER TABLE subscriptions ADD COLUMN requested_at DATETIME;
UPDATE subscriptions SET requested_at = created_at;

-- +goose Down
ALTER TABLE subscriptions DROP COLUMN requested_at;
