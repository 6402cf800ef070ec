-- +goose Up
-- Same column as on Postgres (see its 00008).
ALTER TABLE items ADD COLUMN media TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE items DROP COLUMN media;
