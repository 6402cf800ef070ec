-- +goose Up
-- The running-low warning: a reader whose balance will last less than
-- about two weeks at their forecast rate gets one free notice before
-- anything is held. low_line is that balance in credits, computed from the
-- forecast by a periodic pass (0: no line, never warned); low_line_due is
-- when the pass computes it again (NULL: never computed yet, due now);
-- low_notice_at is when the notice of the current fall below the line was
-- queued (NULL: armed). Credits arriving from outside that lift the
-- balance back to the line arm it again.
ALTER TABLE users ADD COLUMN low_line BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN low_line_due TIMESTAMPTZ;
ALTER TABLE users ADD COLUMN low_notice_at TIMESTAMPTZ;
CREATE INDEX users_low_line_due ON users (low_line_due);

-- +goose Down
DROP INDEX users_low_line_due;
ALTER TABLE users DROP COLUMN low_notice_at;
ALTER TABLE users DROP COLUMN low_line_due;
ALTER TABLE users DROP COLUMN low_line;
