-- +goose Up
-- Same columns as on Postgres (see its 00012).
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
