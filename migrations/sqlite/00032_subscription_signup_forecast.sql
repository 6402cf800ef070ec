-- +goose Up
-- Same column as on Postgres (see its 00032).
ALTER TABLE subscriptions ADD COLUMN signup_credits_month REAL NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE subscriptions DROP COLUMN signup_credits_month;
