-- +goose Up
-- The whole first schema. Times are DATETIME text in one UTC format, so they compare correctly as strings.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE users (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    email            TEXT NOT NULL UNIQUE,
    timezone         TEXT NOT NULL DEFAULT 'UTC',
    balance          BIGINT NOT NULL DEFAULT 0 CHECK (balance >= 0),
    confirmed_at     DATETIME,
    trial_granted    BOOLEAN NOT NULL DEFAULT FALSE,
    hard_bounces     INTEGER NOT NULL DEFAULT 0,
    bouncing_since   DATETIME,
    credit_notice_at DATETIME,
    created_at       DATETIME NOT NULL
);

CREATE TABLE feeds (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    url                TEXT NOT NULL UNIQUE,
    title              TEXT NOT NULL DEFAULT '',
    site_url           TEXT NOT NULL DEFAULT '',
    state              TEXT NOT NULL DEFAULT 'active',
    subscriber_count   INTEGER NOT NULL DEFAULT 0,
    next_poll_at       DATETIME NOT NULL,
    poll_reason        TEXT NOT NULL DEFAULT '',
    validator_url      TEXT NOT NULL DEFAULT '',
    etag               TEXT NOT NULL DEFAULT '',
    last_modified      TEXT NOT NULL DEFAULT '',
    body_hash          TEXT NOT NULL DEFAULT '',
    last_polled_at     DATETIME,
    last_status        INTEGER NOT NULL DEFAULT 0,
    last_error         TEXT NOT NULL DEFAULT '',
    last_elapsed_ms    INTEGER NOT NULL DEFAULT 0,
    last_success_at    DATETIME,
    primed_at          DATETIME,
    last_new_item_at   DATETIME,
    newest_item_date   DATETIME,
    consecutive_errors INTEGER NOT NULL DEFAULT 0,
    errors_since       DATETIME,
    last_ping_at       DATETIME,
    websub_hub         TEXT NOT NULL DEFAULT '',
    websub_topic       TEXT NOT NULL DEFAULT '',
    websub_state       TEXT NOT NULL DEFAULT '',
    websub_secret      TEXT NOT NULL DEFAULT '',
    websub_expires_at  DATETIME,
    websub_renew_at    DATETIME,
    lease_owner        TEXT NOT NULL DEFAULT '',
    lease_until        DATETIME,
    created_at         DATETIME NOT NULL,
    updated_at         DATETIME NOT NULL
);
-- What the poller claims by: due, active feeds with someone to deliver to.
CREATE INDEX feeds_due ON feeds (next_poll_at) WHERE state = 'active' AND subscriber_count > 0;
CREATE INDEX feeds_websub_renew ON feeds (websub_renew_at) WHERE websub_state <> '';

CREATE TABLE poll_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    feed_id     BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    polled_at   DATETIME NOT NULL,
    url         TEXT NOT NULL DEFAULT '',
    status      INTEGER NOT NULL DEFAULT 0,
    outcome     TEXT NOT NULL DEFAULT '',
    conditional BOOLEAN NOT NULL DEFAULT FALSE,
    bytes       BIGINT NOT NULL DEFAULT 0,
    elapsed_ms  INTEGER NOT NULL DEFAULT 0,
    new_items   INTEGER NOT NULL DEFAULT 0,
    reason      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX poll_log_feed ON poll_log (feed_id, polled_at);

CREATE TABLE digests (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    schedule     TEXT NOT NULL,
    timezone     TEXT NOT NULL DEFAULT 'UTC',
    next_slot_at DATETIME NOT NULL,
    last_slot_at DATETIME,
    lease_owner  TEXT NOT NULL DEFAULT '',
    lease_until  DATETIME,
    created_at   DATETIME NOT NULL,
    UNIQUE (user_id, name)
);
CREATE INDEX digests_due ON digests (next_slot_at);

CREATE TABLE subscriptions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    feed_id      BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    digest_id    BIGINT REFERENCES digests (id) ON DELETE SET NULL,
    state        TEXT NOT NULL DEFAULT 'pending',
    created_at   DATETIME NOT NULL,
    confirmed_at DATETIME,
    ended_at     DATETIME,
    ended_reason TEXT NOT NULL DEFAULT '',
    UNIQUE (user_id, feed_id)
);
CREATE INDEX subscriptions_feed ON subscriptions (feed_id, state);

CREATE TABLE items (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    feed_id      BIGINT NOT NULL REFERENCES feeds (id) ON DELETE CASCADE,
    identity     TEXT NOT NULL,
    guid         TEXT NOT NULL DEFAULT '',
    link         TEXT NOT NULL DEFAULT '',
    title        TEXT NOT NULL DEFAULT '',
    content      TEXT NOT NULL DEFAULT '',
    author       TEXT NOT NULL DEFAULT '',
    published_at DATETIME,
    seen_at      DATETIME NOT NULL,
    ignored_rule TEXT NOT NULL DEFAULT '',
    UNIQUE (feed_id, identity)
);

CREATE TABLE digest_issues (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    digest_id  BIGINT NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    slot_at    DATETIME NOT NULL,
    state      TEXT NOT NULL DEFAULT 'queued',
    feed_count INTEGER NOT NULL DEFAULT 0,
    item_count INTEGER NOT NULL DEFAULT 0,
    credits    INTEGER NOT NULL DEFAULT 0,
    created_at DATETIME NOT NULL,
    UNIQUE (digest_id, slot_at)
);

CREATE TABLE digest_items (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    digest_id       BIGINT NOT NULL REFERENCES digests (id) ON DELETE CASCADE,
    subscription_id BIGINT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    item_id         BIGINT NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    feed_id         BIGINT NOT NULL,
    issue_id        BIGINT REFERENCES digest_issues (id) ON DELETE SET NULL,
    queued_at       DATETIME NOT NULL,
    UNIQUE (subscription_id, item_id)
);
CREATE INDEX digest_items_pending ON digest_items (digest_id, issue_id);

CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    kind            TEXT NOT NULL,
    dedupe_key      TEXT NOT NULL UNIQUE,
    user_id         BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    subscription_id BIGINT,
    item_id         BIGINT,
    issue_id        BIGINT,
    to_addr         TEXT NOT NULL,
    credits         INTEGER NOT NULL DEFAULT 0,
    state           TEXT NOT NULL DEFAULT 'queued',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at DATETIME NOT NULL,
    lease_owner     TEXT NOT NULL DEFAULT '',
    lease_until     DATETIME,
    last_error      TEXT NOT NULL DEFAULT '',
    message_id      TEXT NOT NULL DEFAULT '',
    payload         TEXT NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL,
    sent_at         DATETIME
);
-- What the mailer claims by.
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state = 'queued';
CREATE INDEX outbox_user_state ON outbox (user_id, state);

CREATE TABLE ledger_entries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id         BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind            TEXT NOT NULL,
    amount          BIGINT NOT NULL,
    balance_after   BIGINT NOT NULL CHECK (balance_after >= 0),
    idempotency_key TEXT NOT NULL UNIQUE,
    reason          TEXT NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL
);
CREATE INDEX ledger_user ON ledger_entries (user_id, id);

CREATE TABLE purchases (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id           BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credits           BIGINT NOT NULL,
    price_cents       BIGINT NOT NULL,
    currency          TEXT NOT NULL DEFAULT 'usd',
    stripe_session_id TEXT NOT NULL UNIQUE,
    state             TEXT NOT NULL DEFAULT 'pending',
    created_at        DATETIME NOT NULL,
    completed_at      DATETIME
);

CREATE TABLE payment_events (
    event_id    TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    session_id  TEXT NOT NULL DEFAULT '',
    received_at DATETIME NOT NULL
);

CREATE TABLE hosts (
    host                 TEXT PRIMARY KEY,
    min_interval_seconds INTEGER NOT NULL DEFAULT 0,
    backoff_until        DATETIME,
    backoff_reason       TEXT NOT NULL DEFAULT '',
    updated_at           DATETIME NOT NULL
);

-- +goose Down
DROP TABLE hosts;
DROP TABLE payment_events;
DROP TABLE purchases;
DROP TABLE ledger_entries;
DROP TABLE outbox;
DROP TABLE digest_items;
DROP TABLE digest_issues;
DROP TABLE items;
DROP TABLE subscriptions;
DROP TABLE digests;
DROP TABLE poll_log;
DROP TABLE feeds;
DROP TABLE users;
DROP TABLE settings;
