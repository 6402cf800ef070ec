package store

import (
	"context"
	"fmt"
	"time"
)

// Claims of outbox emails hand each due row to exactly one worker for a
// while (its lease) by moving the row's due time (next_attempt_at) to the
// end of the lease: a claimed row leaves the due set at once, and a row
// whose holder died becomes due again when its lease runs out. The claim
// reads the lease each row carried before, for takeover.go.

// ClaimOutbox leases up to limit queued emails that are due at now.
func (s *Store) ClaimOutbox(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]OutboxRow, error) {
	until := utc(now.Add(lease))
	d := s.sqlDialect()
	if !d.pg {
		var out []OutboxRow
		prev, err := s.claimPicked(ctx, outboxPickSQL(d), []any{utc(now), limit},
			`UPDATE outbox SET lease_owner = ?, lease_until = ?, next_attempt_at = ?`, []any{owner, until, until}, &out)
		if err != nil {
			return nil, fmt.Errorf("claim outbox: %w", err)
		}
		s.reportTakeover(TakeoverOutbox, owner, now, prev)
		return out, nil
	}
	var claimed []struct {
		OutboxRow `gorm:"embedded"`
		PrevCols  `gorm:"embedded"`
	}
	if err := s.DB.WithContext(ctx).Raw(outboxClaimSQL(d), utc(now), limit, owner, until, until).Scan(&claimed).Error; err != nil {
		return nil, fmt.Errorf("claim outbox: %w", err)
	}
	out := make([]OutboxRow, len(claimed))
	prev := make([]prevLease, len(claimed))
	for i, c := range claimed {
		out[i], prev[i] = c.OutboxRow, c.prevLease()
	}
	s.reportTakeover(TakeoverOutbox, owner, now, prev)
	return out, nil
}

// outboxPickSQL selects the rows a claim takes (arguments now, limit),
// with the lease each carries.
func outboxPickSQL(d dialect) string {
	return `SELECT id, lease_owner, lease_until FROM outbox
  WHERE state = 'queued' AND next_attempt_at <= ?
  ORDER BY next_attempt_at, id LIMIT ?` + d.skipLocked()
}

// outboxClaimSQL is ClaimOutbox's statement on Postgres: arguments now,
// limit, owner, lease end (twice). The rows are updated by primary key
// (see dialect.idInSelect) and joined to their previous leases.
func outboxClaimSQL(d dialect) string {
	return `WITH prev AS MATERIALIZED (` + outboxPickSQL(d) + `)
UPDATE outbox SET lease_owner = ?, lease_until = ?, next_attempt_at = ?
FROM prev WHERE outbox.id = ANY(ARRAY(SELECT id FROM prev)) AND outbox.id = prev.id
RETURNING outbox.*, ` + prevReturning
}

// RenewOutboxLease moves the lease of the rows owner still holds (queued,
// its name on them) to now+lease and returns how many it renewed: a pass
// that runs long keeps its rows, while a worker that died gives them up
// one lease after its last renewal.
func (s *Store) RenewOutboxLease(ctx context.Context, owner string, ids []int64, lease time.Duration, now time.Time) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	until := utc(now.Add(lease))
	cond, arg := s.sqlDialect().idsIn("id", ids)
	res := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET lease_until = ?, next_attempt_at = ?
WHERE `+cond+` AND lease_owner = ? AND state = ?`, until, until, arg, owner, OutboxQueued)
	if res.Error != nil {
		return 0, fmt.Errorf("renew outbox lease: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// ReleaseOutbox gives rows back without counting an attempt (the worker is
// shutting down, or its lease is about to run out): they are due at once,
// for this or another process.
func (s *Store) ReleaseOutbox(ctx context.Context, owner string, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res := s.DB.WithContext(ctx).Exec(`UPDATE outbox SET next_attempt_at = ?, lease_owner = '', lease_until = NULL
WHERE id IN ? AND lease_owner = ? AND state = ?`, s.now(), ids, owner, OutboxQueued)
	if res.Error != nil {
		return 0, fmt.Errorf("release outbox: %w", res.Error)
	}
	return res.RowsAffected, nil
}
