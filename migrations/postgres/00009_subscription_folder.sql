-- +goose Up
-- subscriptions.folder is the folder an OPML import put the feed in
-- ("Tech / Go"; '' at the top level), written back by the export.
ALTER TABLE subscriptions ADD COLUMN folder TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE subscriptions DROP COLUMN folder;
