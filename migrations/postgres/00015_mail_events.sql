-- +goose Up
-- Delivery failures are judged by cause (reason) and by whose problem they
-- are (party: reader, sender, none); only the reader's count against an
-- address. inbound_events keeps both for the reports that came back.
-- mail_events is the per-destination record `feedmail mail health` reads:
-- one row per failure judged (at SMTP time, by mail, by an email
-- service's notification) and per complaint, with the recipient's domain.
-- Rows older than the health window are pruned by the mailer.
ALTER TABLE inbound_events ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE inbound_events ADD COLUMN party TEXT NOT NULL DEFAULT '';
CREATE TABLE mail_events (
    id        BIGSERIAL PRIMARY KEY,
    at        TIMESTAMPTZ NOT NULL,
    domain    TEXT NOT NULL,
    source    TEXT NOT NULL,
    kind      TEXT NOT NULL,
    reason    TEXT NOT NULL DEFAULT '',
    party     TEXT NOT NULL DEFAULT '',
    severity  TEXT NOT NULL DEFAULT '',
    status    TEXT NOT NULL DEFAULT '',
    outbox_id BIGINT,
    detail    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX mail_events_at ON mail_events (at);
CREATE INDEX mail_events_domain ON mail_events (domain, at);

-- +goose Down
DROP TABLE mail_events;
ALTER TABLE inbound_events DROP COLUMN party;
ALTER TABLE inbound_events DROP COLUMN reason;
