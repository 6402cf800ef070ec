-- +goose Up
-- Same columns and index as on Postgres (see its 00021).
ALTER TABLE users ADD COLUMN low_line INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN low_line_due DATETIME;
ALTER TABLE users ADD COLUMN low_notice_at DATETIME;
CREATE INDEX users_low_line_due ON users (low_line_due);

-- +goose Down
DROP INDEX users_low_line_due;
ALTER TABLE users DROP COLUMN low_notice_at;
ALTER TABLE users DROP COLUMN low_line_due;
ALTER TABLE users DROP COLUMN low_line;
