-- +goose Up
-- subscriptions.confirmed_by says how a subscription was confirmed, the
-- reader's proof of consent in their data export: "link" (the person
-- followed the emailed confirmation link), "operator" (`feedmail subscribe
-- --confirmed` or an OPML import with --confirmed), "account" (on the
-- account page); '' for subscriptions confirmed before it was recorded.
-- users.deleted_at marks an account its owner deleted: the row stays, its
-- address replaced by a tombstone, so the ledger and purchases keep their
-- user for accounting.
ALTER TABLE subscriptions ADD COLUMN confirmed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN deleted_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE users DROP COLUMN deleted_at;
ALTER TABLE subscriptions DROP COLUMN confirmed_by;
