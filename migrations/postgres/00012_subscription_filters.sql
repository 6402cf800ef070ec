-- +goose Up
-- The reader's controls of a subscription: include_terms and exclude_terms
-- (comma-separated words, phrases or /regexps/; '' for none) decide which
-- new posts reach it, format how its emails show a post ('full', 'summary'
-- or 'title'). The partial index finds the few filtered subscriptions of
-- a poll's feeds.
ALTER TABLE subscriptions ADD COLUMN include_terms TEXT NOT NULL DEFAULT '';
ALTER TABLE subscriptions ADD COLUMN exclude_terms TEXT NOT NULL DEFAULT '';
ALTER TABLE subscriptions ADD COLUMN format TEXT NOT NULL DEFAULT 'full';
CREATE INDEX subscriptions_filtered ON subscriptions (feed_id)
  WHERE state = 'active' AND (include_terms <> '' OR exclude_terms <> '');

-- +goose Down
DROP INDEX subscriptions_filtered;
ALTER TABLE subscriptions DROP COLUMN format;
ALTER TABLE subscriptions DROP COLUMN exclude_terms;
ALTER TABLE subscriptions DROP COLUMN include_terms;
