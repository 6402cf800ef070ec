-- +goose Up
-- Same tables as on Postgres (see its 00022).
CREATE TABLE feed_owners (
    feed_id      BIGINT PRIMARY KEY REFERENCES feeds (id) ON DELETE CASCADE,
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    verified_by  TEXT NOT NULL,
    created_at   DATETIME NOT NULL,
    lapse_seq    INTEGER NOT NULL DEFAULT 0,
    notified_seq INTEGER NOT NULL DEFAULT 0,
    lapsed_at    DATETIME,
    swept_at     DATETIME
);
CREATE INDEX feed_owners_user ON feed_owners (user_id);
CREATE TABLE feed_owner_claims (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    feed_id     BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token       TEXT NOT NULL UNIQUE,
    created_at  DATETIME NOT NULL,
    checked_at  DATETIME,
    last_error  TEXT NOT NULL DEFAULT '',
    verified_at DATETIME,
    UNIQUE (feed_id, user_id)
);
CREATE TABLE owner_paid_choices (
    subscription_id BIGINT PRIMARY KEY REFERENCES subscriptions (id) ON DELETE CASCADE,
    feed_id         BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    chosen_at       DATETIME NOT NULL
);
CREATE INDEX owner_paid_choices_feed ON owner_paid_choices (feed_id);

-- +goose Down
DROP TABLE owner_paid_choices;
DROP TABLE feed_owner_claims;
DROP TABLE feed_owners;
