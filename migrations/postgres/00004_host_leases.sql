-- +goose Up
-- "At most 2 requests in flight per host" across every process: a host is
-- polled by one process at a time, which holds a short lease on its hosts
-- row (renewed with each claim of that host's feeds, never longer than the
-- feed leases it covers) and applies its in-memory limit of 2. feeds.host is
-- the host key (store.HostOf of the URL), kept by the store whenever the URL
-- is written; rows that predate this column are filled in by the poller at
-- start.
ALTER TABLE feeds ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN lease_until TIMESTAMPTZ;

-- +goose Down
ALTER TABLE hosts DROP COLUMN lease_until;
ALTER TABLE hosts DROP COLUMN lease_owner;
ALTER TABLE feeds DROP COLUMN host;
