-- +goose Up
-- Same table as on Postgres (see its 00027).
CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY,
    tat INTEGER NOT NULL
);
CREATE INDEX rate_limits_tat ON rate_limits (tat);

-- +goose Down
DROP TABLE rate_limits;
