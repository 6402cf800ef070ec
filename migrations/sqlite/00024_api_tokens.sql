-- +goose Up
-- Same table as on Postgres (see its 00024).
CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL DEFAULT '',
    key          TEXT NOT NULL UNIQUE,
    token_hash   BLOB NOT NULL,
    created_at   DATETIME NOT NULL,
    last_used_at DATETIME,
    revoked_at   DATETIME
);
CREATE INDEX api_tokens_user ON api_tokens (user_id);

-- +goose Down
DROP TABLE api_tokens;
