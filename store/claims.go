package store

import (
	"context"
	"fmt"
	"time"
)

// Claims hand each due row to exactly one worker for a while (its lease).
//
// Feeds and outbox emails use one trick: claiming moves the row's due time
// (next_poll_at, next_attempt_at) to the end of the lease. A claimed row thus
// leaves the due set at once, so claimers never scan past rows others hold,
// and a row whose holder died simply becomes due again when its lease runs
// out. The holder writes its result guarded by lease_owner, so a holder that
// lost its lease cannot overwrite the newer owner's work.
//
// On Postgres the inner SELECT takes FOR UPDATE SKIP LOCKED, so concurrent
// claimers pass over each other's rows instead of waiting. On SQLite there is
// one writer at a time and the single UPDATE … RETURNING statement is atomic.

// ClaimDueFeeds leases up to limit active feeds whose next poll is due at now
// and that have at least one active, confirmed subscription, oldest first.
func (s *Store) ClaimDueFeeds(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]Feed, error) {
	until := utc(now.Add(lease))
	q := `UPDATE feeds SET lease_owner = ?, lease_until = ?, next_poll_at = ?
WHERE id IN (SELECT id FROM feeds
  WHERE state = 'active' AND subscriber_count > 0 AND next_poll_at <= ?
  ORDER BY next_poll_at LIMIT ?` + s.skipLocked() + `)
RETURNING *`
	var out []Feed
	if err := s.DB.WithContext(ctx).Raw(q, owner, until, until, utc(now), limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim due feeds: %w", err)
	}
	return out, nil
}

// ClaimFeedForPoll leases one feed by id regardless of its schedule (for
// `feedmail poll`, pings and revivals). Like ClaimDueFeeds it moves the feed's
// next_poll_at to at least the end of the lease, as ClaimDueFeeds does: a
// due feed claimed here must leave the due set, or another worker's
// ClaimDueFeeds (which does not look at leases) would claim and fetch it a
// second time meanwhile. It fails with ErrNotFound when another worker holds
// an unexpired lease or the feed does not exist.
func (s *Store) ClaimFeedForPoll(ctx context.Context, id int64, owner string, lease time.Duration, now time.Time) (*Feed, error) {
	until := utc(now.Add(lease))
	q := `UPDATE feeds SET lease_owner = ?, lease_until = ?,
  next_poll_at = CASE WHEN next_poll_at < ? THEN ? ELSE next_poll_at END
WHERE id = ? AND (lease_until IS NULL OR lease_until <= ? OR lease_owner = ?)
RETURNING *`
	var out []Feed
	if err := s.DB.WithContext(ctx).Raw(q, owner, until, until, until, id, utc(now), owner).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim feed %d: %w", id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("claim feed %d: unknown or held by another worker: %w", id, ErrNotFound)
	}
	return &out[0], nil
}

// ReleaseFeed gives a lease back without recording a poll, and makes the feed
// due again at next.
func (s *Store) ReleaseFeed(ctx context.Context, id int64, owner string, next time.Time) error {
	return s.DB.WithContext(ctx).Exec(`UPDATE feeds SET lease_owner = '', lease_until = NULL, next_poll_at = ?
WHERE id = ? AND lease_owner = ?`, utc(next), id, owner).Error
}

// ClaimOutbox leases up to limit queued emails that are due at now.
func (s *Store) ClaimOutbox(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]OutboxEmail, error) {
	until := utc(now.Add(lease))
	q := `UPDATE outbox SET lease_owner = ?, lease_until = ?, next_attempt_at = ?
WHERE id IN (SELECT id FROM outbox
  WHERE state = 'queued' AND next_attempt_at <= ?
  ORDER BY next_attempt_at LIMIT ?` + s.skipLocked() + `)
RETURNING *`
	var out []OutboxEmail
	if err := s.DB.WithContext(ctx).Raw(q, owner, until, until, utc(now), limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim outbox: %w", err)
	}
	return out, nil
}

// ClaimDueDigests leases up to limit digests whose next slot has come. A
// digest's slot time stays as it is (the issue is keyed on it); the lease
// alone keeps other workers away until it expires.
func (s *Store) ClaimDueDigests(ctx context.Context, owner string, lease time.Duration, now time.Time, limit int) ([]Digest, error) {
	until := utc(now.Add(lease))
	q := `UPDATE digests SET lease_owner = ?, lease_until = ?
WHERE id IN (SELECT id FROM digests
  WHERE next_slot_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
  ORDER BY next_slot_at LIMIT ?` + s.skipLocked() + `)
RETURNING *`
	var out []Digest
	if err := s.DB.WithContext(ctx).Raw(q, owner, until, utc(now), utc(now), limit).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("claim digests: %w", err)
	}
	return out, nil
}

// SpreadOverdueFeeds moves feeds that are overdue by more than grace to a
// point spread over the next window (by feed id, so every process computes
// the same spot), so that after downtime the backlog is polled evenly rather
// than fired at publishers all at once. Feeds that are only slightly late are
// left alone. It returns how many feeds moved.
func (s *Store) SpreadOverdueFeeds(ctx context.Context, now time.Time, grace, window time.Duration) (int64, error) {
	if window < time.Second {
		return 0, nil
	}
	cutoff := utc(now.Add(-grace))
	secs := int64(window / time.Second)
	var q string
	if s.Postgres() {
		q = `UPDATE feeds SET next_poll_at = ?::timestamptz + make_interval(secs => (id * 7919) % ?)
WHERE state = 'active' AND subscriber_count > 0 AND next_poll_at < ? AND lease_owner = ''`
	} else {
		q = `UPDATE feeds SET next_poll_at = strftime('%Y-%m-%d %H:%M:%S+00:00', ?, '+' || ((id * 7919) % ?) || ' seconds')
WHERE state = 'active' AND subscriber_count > 0 AND next_poll_at < ? AND lease_owner = ''`
	}
	tx := s.DB.WithContext(ctx).Exec(q, utc(now), secs, cutoff)
	if tx.Error != nil {
		return 0, fmt.Errorf("spread overdue feeds: %w", tx.Error)
	}
	return tx.RowsAffected, nil
}
