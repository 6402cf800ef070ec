-- +goose Up
-- ping_queued_at: a publisher pinged the feed while a poll of it was in
-- progress; the poll's write makes the feed due again at once (one more
-- conditional poll) and clears it. websub_no_lease: the feed's hub refused a
-- subscription request that carried hub.lease_seconds and accepted it
-- without; requests to that hub for that topic leave the lease out.
ALTER TABLE feeds ADD COLUMN ping_queued_at TIMESTAMPTZ;
ALTER TABLE feeds ADD COLUMN websub_no_lease BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE feeds DROP COLUMN websub_no_lease;
ALTER TABLE feeds DROP COLUMN ping_queued_at;
