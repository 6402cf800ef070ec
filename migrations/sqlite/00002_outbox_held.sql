-- +goose Up
-- The mailer expires mail held for credits after 30 days; it scans held rows by age.
CREATE INDEX outbox_held ON outbox (created_at) WHERE state = 'held';

-- +goose Down
DROP INDEX outbox_held;
