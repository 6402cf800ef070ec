-- +goose Up
-- What the signup forecast said a subscription costs a month by email
-- (credits; 0 when it could not tell), kept for the running-low line of a
-- reader whose feed's stored posts cannot tell a rate yet.
ALTER TABLE subscriptions ADD COLUMN signup_credits_month DOUBLE PRECISION NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE subscriptions DROP COLUMN signup_credits_month;
