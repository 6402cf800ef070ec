-- +goose Up
-- A failure that is the sender's own problem (a blocklist, SPF/DKIM/DMARC,
-- content, a rate limit) never counts against the reader: it slows the
-- recipient's whole domain instead. mail_destinations holds one row per
-- domain that turned our mail away for such a cause, shared by every
-- process: while paused_until is ahead, claimed email for the domain goes
-- back to the queue, due then, without being sent. failures is the streak
-- of consecutive pauses (the delay doubles with it); a successful send to
-- the domain deletes the row.
-- outbox.blocked_since is when a row was first turned away or put back
-- for such a cause: its retry budget is counted from there on the clock,
-- not in attempts (a put-back is no attempt).
CREATE TABLE mail_destinations (
    domain       TEXT PRIMARY KEY,
    paused_until TIMESTAMPTZ NOT NULL,
    reason       TEXT NOT NULL DEFAULT '',
    failures     INTEGER NOT NULL DEFAULT 0,
    updated_at   TIMESTAMPTZ NOT NULL
);
ALTER TABLE outbox ADD COLUMN blocked_since TIMESTAMPTZ;

-- +goose Down
ALTER TABLE outbox DROP COLUMN blocked_since;
DROP TABLE mail_destinations;
