package store

import (
	"context"
	"fmt"
	"time"
)

// Claims of outbox emails hand each due row to exactly one worker for a
// while (its lease) by moving the row's due time (next_attempt_at) to the
// end of the lease: a claimed row leaves the due set at once, and a row
// whose holder died becomes due again when its lease runs out.

// ClaimOutbox leases up to limit queued emails that are due at now.
func (s *Store) ClaimOutbox(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]OutboxRow, error) {
	until := utc(now.Add(lease))
	var out []OutboxRow
	if err := s.DB.WithContext(ctx).Raw(outboxClaimSQL(s.sqlDialect()), owner, until, until, utc(now), limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim outbox: %w", err)
	}
	return out, nil
}

// outboxClaimSQL is ClaimOutbox's statement: arguments owner, lease end
// (twice), now, limit.
func outboxClaimSQL(d dialect) string {
	return `UPDATE outbox SET lease_owner = ?, lease_until = ?, next_attempt_at = ?
WHERE ` + d.idInSelect(`SELECT id FROM outbox
  WHERE state = 'queued' AND next_attempt_at <= ?
  ORDER BY next_attempt_at, id LIMIT ?`+d.skipLocked()) + `
RETURNING *`
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
