-- +goose Up
-- Same column as on Postgres (see its 00028).
ALTER TABLE users ADD COLUMN signed_out_at DATETIME;

-- +goose Down
ALTER TABLE users DROP COLUMN signed_out_at;
