-- +goose Up
-- subscriptions.requested_at is when the person last asked for the
-- subscription (signup, or a new request after it ended). The feed's items
-- seen after it and before the person confirmed are delivered on
-- confirmation: what they saw at signup is the baseline, anything later is
-- theirs. Rows from before this migration take created_at.
ALTER TABLE subscriptions ADD COLUMN requested_at TIMESTAMPTZ;
UPDATE subscriptions SET requested_at = created_at;

-- +goose Down
ALTER TABLE subscriptions DROP COLUMN requested_at;
