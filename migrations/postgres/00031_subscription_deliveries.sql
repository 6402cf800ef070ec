-- +goose Up
-- A person may get one feed in several places: one subscription per
-- (person, feed, channel, target) instead of one per (person, feed). Email
-- has the target '' (the person's address), so a person still gets a feed
-- by email once.
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_user_id_feed_id_key;
CREATE UNIQUE INDEX subscriptions_delivery ON subscriptions (user_id, feed_id, channel, target);

-- +goose Down
-- One subscription per person and feed again: of a person's deliveries of
-- a feed the email one stays (else the oldest); the others go.
DELETE FROM subscriptions s WHERE EXISTS (
  SELECT 1 FROM subscriptions o WHERE o.user_id = s.user_id AND o.feed_id = s.feed_id AND o.id <> s.id
    AND (CASE WHEN o.channel = 'email' THEN 0 ELSE 1 END, o.id) < (CASE WHEN s.channel = 'email' THEN 0 ELSE 1 END, s.id));
DROP INDEX subscriptions_delivery;
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_user_id_feed_id_key UNIQUE (user_id, feed_id);
