-- +goose Up
-- Same table as on Postgres (see its 00025).
CREATE TABLE item_articles (
    item_id     INTEGER PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    state       TEXT NOT NULL DEFAULT 'pending',
    url         TEXT NOT NULL DEFAULT '',
    html        TEXT NOT NULL DEFAULT '',
    text_chars  INTEGER NOT NULL DEFAULT 0,
    reason      TEXT NOT NULL DEFAULT '',
    next_try_at DATETIME NOT NULL,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until DATETIME,
    created_at  DATETIME NOT NULL,
    fetched_at  DATETIME
);
CREATE INDEX item_articles_due ON item_articles (next_try_at) WHERE state = 'pending';

-- +goose Down
DROP TABLE item_articles;
