-- +goose Up
-- subscriptions.send_newest: the person asked, at signup, for the feed's
-- newest post as soon as they confirm (it then goes out as one email,
-- charged like any other).
ALTER TABLE subscriptions ADD COLUMN send_newest BOOLEAN NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE subscriptions DROP COLUMN send_newest;
