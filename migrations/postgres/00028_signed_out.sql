-- +goose Up
-- "Sign out everywhere": account links issued before signed_out_at no
-- longer open the account (links carry their issue time). NULL: never.
ALTER TABLE users ADD COLUMN signed_out_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE users DROP COLUMN signed_out_at;
