-- +goose Up
-- The article behind a post, for subscriptions whose format is 'article':
-- fetched from the item's link once for all its readers and kept here.
-- state is 'pending' (wanted, not fetched yet: next_try_at says when, a
-- worker holding it sets lease_owner/lease_until), 'ready' (html is the
-- extracted main text, unsanitized like items.content; url the page it
-- came from, text_chars its length as text) or 'failed' (reason says
-- why; the emails show the feed's own content).
CREATE TABLE item_articles (
    item_id     BIGINT PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    state       TEXT NOT NULL DEFAULT 'pending',
    url         TEXT NOT NULL DEFAULT '',
    html        TEXT NOT NULL DEFAULT '',
    text_chars  INTEGER NOT NULL DEFAULT 0,
    reason      TEXT NOT NULL DEFAULT '',
    next_try_at TIMESTAMPTZ NOT NULL,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL,
    fetched_at  TIMESTAMPTZ
);
CREATE INDEX item_articles_due ON item_articles (next_try_at) WHERE state = 'pending';

-- +goose Down
DROP TABLE item_articles;
