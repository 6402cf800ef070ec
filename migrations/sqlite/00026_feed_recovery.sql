-- +goose Up
-- Same columns and tables as on Postgres (see its 00026).
ALTER TABLE feeds ADD COLUMN recovery_next_at  DATETIME;
ALTER TABLE feeds ADD COLUMN recovery_at       DATETIME;
ALTER TABLE feeds ADD COLUMN recovery_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE feeds ADD COLUMN recovery_episode  DATETIME;
ALTER TABLE feeds ADD COLUMN recovery_state    TEXT NOT NULL DEFAULT '';
ALTER TABLE feeds ADD COLUMN recovery_note     TEXT NOT NULL DEFAULT '';
CREATE INDEX feeds_failing ON feeds (errors_since) WHERE consecutive_errors >= 3;
CREATE INDEX feeds_recovery ON feeds (recovery_state) WHERE recovery_state <> '';
CREATE TABLE feed_moves (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    from_feed_id    BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    to_feed_id      BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    found_by        TEXT NOT NULL DEFAULT '',
    posts_in_common INTEGER NOT NULL DEFAULT 0,
    reason          TEXT NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL,
    UNIQUE (from_feed_id, to_feed_id, kind)
);
CREATE TABLE reader_moves (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    move_id         BIGINT NOT NULL REFERENCES feed_moves (id) ON DELETE CASCADE,
    subscription_id BIGINT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    user_id         BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    state           TEXT NOT NULL,
    created_at      DATETIME NOT NULL,
    acted_at        DATETIME,
    UNIQUE (move_id, subscription_id)
);
CREATE INDEX reader_moves_user ON reader_moves (user_id);

-- +goose Down
DROP TABLE reader_moves;
DROP TABLE feed_moves;
DROP INDEX feeds_recovery;
DROP INDEX feeds_failing;
ALTER TABLE feeds DROP COLUMN recovery_note;
ALTER TABLE feeds DROP COLUMN recovery_state;
ALTER TABLE feeds DROP COLUMN recovery_episode;
ALTER TABLE feeds DROP COLUMN recovery_attempts;
ALTER TABLE feeds DROP COLUMN recovery_at;
ALTER TABLE feeds DROP COLUMN recovery_next_at;
