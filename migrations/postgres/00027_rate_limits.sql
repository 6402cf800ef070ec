-- +goose Up
-- Rate limits shared by every process and surviving restarts (signup
-- confirmations per client, mailbox and domain; new-feed fetches per
-- account and client; single use of a signup proof). One row per key:
-- tat is the limit's "theoretical arrival time" in Unix milliseconds (a
-- token bucket written as one number, GCRA): the key is full again, and
-- the row may go, once tat is in the past.
CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY,
    tat BIGINT NOT NULL
);
CREATE INDEX rate_limits_tat ON rate_limits (tat);

-- +goose Down
DROP TABLE rate_limits;
