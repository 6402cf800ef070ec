-- +goose Up
-- items.media holds what a feed said about an item's media, as JSON (see
-- store.ItemMedia): enclosures (podcast episodes, videos, documents) with
-- their type, size and duration, a thumbnail and a media description. The
-- email shows the enclosures, and the description and thumbnail of an item
-- that has no content (a YouTube video, say). Empty for items without media
-- and for rows from before this migration.
ALTER TABLE items ADD COLUMN media TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE items DROP COLUMN media;
