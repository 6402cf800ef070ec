-- +goose NO TRANSACTION
-- +goose Up
-- Same change as on Postgres (see its 00031): the unique key of
-- subscriptions becomes (user_id, feed_id, channel, target). SQLite cannot
-- drop the table's UNIQUE (user_id, feed_id), so the table is rebuilt, the
-- way SQLite documents it: foreign keys off (outside a transaction, on
-- this one connection), a new table filled from the old one, the old one
-- dropped, the new one renamed, its indexes made again, all in one
-- transaction. With foreign keys off dropping the old table deletes
-- nothing that refers to it (outbox, digest items, owner-paid choices).
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE subscriptions_rebuilt (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id        BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    feed_id        BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    digest_id      BIGINT REFERENCES digests (id) ON DELETE SET NULL,
    state          TEXT NOT NULL DEFAULT 'pending',
    created_at     DATETIME NOT NULL,
    confirmed_at   DATETIME,
    ended_at       DATETIME,
    ended_reason   TEXT NOT NULL DEFAULT '',
    requested_at   DATETIME,
    folder         TEXT NOT NULL DEFAULT '',
    send_newest    BOOLEAN NOT NULL DEFAULT 0,
    confirmed_by   TEXT NOT NULL DEFAULT '',
    include_terms  TEXT NOT NULL DEFAULT '',
    exclude_terms  TEXT NOT NULL DEFAULT '',
    format         TEXT NOT NULL DEFAULT 'full',
    paused_at      DATETIME,
    paused_until   DATETIME,
    channel        TEXT NOT NULL DEFAULT 'email',
    target         TEXT NOT NULL DEFAULT '',
    channel_secret TEXT NOT NULL DEFAULT ''
);
INSERT INTO subscriptions_rebuilt (id, user_id, feed_id, digest_id, state, created_at, confirmed_at, ended_at,
    ended_reason, requested_at, folder, send_newest, confirmed_by, include_terms, exclude_terms, format,
    paused_at, paused_until, channel, target, channel_secret)
SELECT id, user_id, feed_id, digest_id, state, created_at, confirmed_at, ended_at,
    ended_reason, requested_at, folder, send_newest, confirmed_by, include_terms, exclude_terms, format,
    paused_at, paused_until, channel, target, channel_secret
FROM subscriptions;
DROP TABLE subscriptions;
ALTER TABLE subscriptions_rebuilt RENAME TO subscriptions;
CREATE UNIQUE INDEX subscriptions_delivery ON subscriptions (user_id, feed_id, channel, target);
CREATE INDEX subscriptions_feed ON subscriptions (feed_id, state);
CREATE INDEX subscriptions_filtered ON subscriptions (feed_id)
  WHERE state = 'active' AND (include_terms <> '' OR exclude_terms <> '');
CREATE INDEX subscriptions_paused_until ON subscriptions (paused_until) WHERE paused_at IS NOT NULL;
COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
-- One subscription per person and feed again (see Postgres's Down): the
-- email delivery stays (else the oldest), then the table is rebuilt with
-- the old key.
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
DELETE FROM subscriptions WHERE EXISTS (
  SELECT 1 FROM subscriptions o WHERE o.user_id = subscriptions.user_id AND o.feed_id = subscriptions.feed_id
    AND o.id <> subscriptions.id
    AND (CASE WHEN o.channel = 'email' THEN 0 ELSE 1 END < CASE WHEN subscriptions.channel = 'email' THEN 0 ELSE 1 END
      OR (CASE WHEN o.channel = 'email' THEN 0 ELSE 1 END = CASE WHEN subscriptions.channel = 'email' THEN 0 ELSE 1 END
        AND o.id < subscriptions.id)));
DELETE FROM digest_items WHERE subscription_id NOT IN (SELECT id FROM subscriptions);
DELETE FROM owner_paid_choices WHERE subscription_id NOT IN (SELECT id FROM subscriptions);
CREATE TABLE subscriptions_rebuilt (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id        BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    feed_id        BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    digest_id      BIGINT REFERENCES digests (id) ON DELETE SET NULL,
    state          TEXT NOT NULL DEFAULT 'pending',
    created_at     DATETIME NOT NULL,
    confirmed_at   DATETIME,
    ended_at       DATETIME,
    ended_reason   TEXT NOT NULL DEFAULT '',
    requested_at   DATETIME,
    folder         TEXT NOT NULL DEFAULT '',
    send_newest    BOOLEAN NOT NULL DEFAULT 0,
    confirmed_by   TEXT NOT NULL DEFAULT '',
    include_terms  TEXT NOT NULL DEFAULT '',
    exclude_terms  TEXT NOT NULL DEFAULT '',
    format         TEXT NOT NULL DEFAULT 'full',
    paused_at      DATETIME,
    paused_until   DATETIME,
    channel        TEXT NOT NULL DEFAULT 'email',
    target         TEXT NOT NULL DEFAULT '',
    channel_secret TEXT NOT NULL DEFAULT '',
    UNIQUE (user_id, feed_id)
);
INSERT INTO subscriptions_rebuilt (id, user_id, feed_id, digest_id, state, created_at, confirmed_at, ended_at,
    ended_reason, requested_at, folder, send_newest, confirmed_by, include_terms, exclude_terms, format,
    paused_at, paused_until, channel, target, channel_secret)
SELECT id, user_id, feed_id, digest_id, state, created_at, confirmed_at, ended_at,
    ended_reason, requested_at, folder, send_newest, confirmed_by, include_terms, exclude_terms, format,
    paused_at, paused_until, channel, target, channel_secret
FROM subscriptions;
DROP TABLE subscriptions;
ALTER TABLE subscriptions_rebuilt RENAME TO subscriptions;
CREATE INDEX subscriptions_feed ON subscriptions (feed_id, state);
CREATE INDEX subscriptions_filtered ON subscriptions (feed_id)
  WHERE state = 'active' AND (include_terms <> '' OR exclude_terms <> '');
CREATE INDEX subscriptions_paused_until ON subscriptions (paused_until) WHERE paused_at IS NOT NULL;
COMMIT;
PRAGMA foreign_keys = ON;
