-- +goose Up
-- Same columns as on Postgres (see its 00004). A SQLite database has one
-- process polling it, so the host leases are not used there.
ALTER TABLE feeds ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN lease_until DATETIME;

-- +goose Down
ALTER TABLE hosts DROP COLUMN lease_until;
ALTER TABLE hosts DROP COLUMN lease_owner;
ALTER TABLE feeds DROP COLUMN host;
